// The metalake and catalog pages: the metalake list (create, enable/disable, drop), a metalake's catalogs
// (filter by provider, create with a form per provider), a catalog's schemas (create, drop).
import { api, catPath, href, lakePath, names } from "./api.js";
import { $, act, auditTable, dropButton, errorBox, field, h, page, pagedList, parseProperties,
         propertiesEditor } from "./dom.js";
import { redrawTree } from "./tree.js";
import { metalakeTags, ownerSection, tagsSection } from "./attached.js";
import { guard, mayOwn } from "./permissions.js";

export async function metalakesPage() {
  const listSlot = h("div");
  const name = h("input", { name: "name", autocomplete: "off" });
  const comment = h("input", { name: "comment" });
  const props = h("textarea", { name: "properties", rows: 2, placeholder: "key=value, one a line" });
  const result = h("div", { id: "create-metalake-result" });
  const form = h("form.card#create-metalake", { "aria-label": "Create metalake" }, h("h2", {}, "Create a metalake"),
    field("Name", name, true), field("Comment", comment), field("Properties", props),
    h("button.primary", { type: "submit" }, "Create metalake"), result);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const created = await act(result, async () => api("POST", "/api/metalakes",
      { name: name.value.trim(), comment: comment.value || null, properties: parseProperties(props.value) }),
      `metalake ${name.value.trim()} created`);
    if (created) { form.reset(); await drawList(); redrawTree(); }
  });
  page("Metalakes", [], listSlot, form);
  async function drawList() {
    let lakes;
    try { lakes = (await api("GET", "/api/metalakes")).metalakes; } catch (exc) {
      listSlot.replaceChildren(errorBox(exc));
      return;
    }
    listSlot.replaceChildren(pagedList("metalakes", "metalakes", ["Name", "Comment", "State", "Creator", "", ""], lakes, (m) => [
      h("a", { href: href(m.name) }, m.name), m.comment,
      stateBadge(m), m.audit?.creator,
      toggleButton(`toggle-metalake-${m.name}`, inUse(m), lakePath(m.name), drawList),
      dropButton(`metalake ${m.name}`, `drop-metalake-${m.name}`, async (slot) => {
        if (await act(slot, () => api("DELETE", `${lakePath(m.name)}?force=true`)) !== undefined) {
          await drawList();
          redrawTree();
        }
      })], (m) => m.name));
  }
  await drawList();
}

/** Enable or disable a metalake or catalog (PATCH {"inUse": ...}); a disabled one refuses changes inside it. */
function toggleButton(id, inUse, path, redraw) {
  const slot = h("span");
  const button = h("button", { type: "button", id }, inUse ? "Disable" : "Enable");
  button.addEventListener("click", async () => {
    if (await act(slot, () => api("PATCH", path, { inUse: !inUse })) !== undefined) await redraw();
  });
  return h("span.row", {}, button, slot);
}

const inUse = (x) => x.properties?.["in-use"] !== "false";
const stateBadge = (x, id) => h("span", { id, class: `badge ${inUse(x) ? "on" : "off"}` }, inUse(x) ? "in use" : "disabled");

const PROVIDERS = {
  memory: { about: "in this server's memory (lost at restart; for trying things out)", properties: [] },
  sqlite: { about: "a real SQLite file per catalog under the server's sqlite catalog root",
            properties: [["path", "catalog file, relative to the sqlite catalog root", true],
                         ["busy-timeout-ms", "how long to wait for another writer (default 5000)", false]] },
  hive: { about: "a Hive-like metastore reached over HTTP",
          properties: [["metastore.uris", "http://host:port[,http://host:port...]", true],
                       ["client.timeout-ms", "per-call socket timeout", false],
                       ["default.catalog", "the Hive metastore catalog to use", false]] },
};

export async function metalakePage(m) {
  const slot = h("div");
  page(`Metalake ${m}`, [["Metalakes", "#/"], [m]], slot);
  let lake, catalogs;
  try {
    lake = (await api("GET", lakePath(m))).metalake;
    catalogs = (await api("GET", `${lakePath(m)}/catalogs?details=true`)).catalogs;
  } catch (exc) { slot.append(errorBox(exc)); return; }
  const filter = h("select", { id: "catalog-filter" }, h("option", { value: "" }, "all providers"),
    Object.keys(PROVIDERS).map((p) => h("option", { value: p }, p)));
  const list = (only) => pagedList("catalogs", "catalogs", ["Catalog", "Type", "Provider", "Comment", "Creator"],
    catalogs.filter((c) => !only || c.provider === only),
    (c) => [h("a", { href: href(m, c.name) }, c.name), c.type, c.provider, c.comment, c.audit?.creator], (c) => c.name);
  const listSlot = h("div", {}, list(""));
  filter.addEventListener("change", () => listSlot.replaceChildren(list(filter.value)));
  slot.replaceChildren(
    h("p.muted", {}, lake.comment || ""),
    h("div.row", {}, h("label", { for: "catalog-filter" }, "Provider"), filter), listSlot,
    catalogForm(m),
    h("h2", {}, "Properties"), guard(propertiesEditor("metalake-properties", lake.properties,
      async (updates) => (await api("PUT", lakePath(m), { updates })).metalake.properties),
    await mayOwn(m, [["metalake", m]]), `change metalake ${m}: only its owner may`),
    ...(await Promise.all([metalakeTags(m), ownerSection(m, "metalake", m)])).flat(),
    h("h2", {}, "Audit"), auditTable(lake.audit));
}

function catalogForm(m) {
  const name = h("input", { name: "name", autocomplete: "off" });
  const provider = h("select", { name: "provider" }, Object.keys(PROVIDERS).map((p) => h("option", { value: p }, p)));
  const comment = h("input", { name: "comment" });
  const extra = h("textarea", { name: "properties", rows: 2, placeholder: "other properties: key=value, one a line" });
  const providerFields = h("div");
  const about = h("p.muted");
  const drawProvider = () => {
    const spec = PROVIDERS[provider.value];
    about.textContent = spec.about;
    providerFields.replaceChildren(...spec.properties.map(([key, doc, required]) =>
      field(`${key} (${doc})`, h("input", { name: `prop:${key}`, dataset: { key } }), required)));
  };
  provider.addEventListener("change", drawProvider);
  drawProvider();
  const result = h("div", { id: "create-catalog-result" });
  const form = h("form.card#create-catalog", { "aria-label": "Create catalog" }, h("h2", {}, "Create a catalog"),
    field("Name", name, true), field("Provider", provider, true), about, providerFields, field("Comment", comment),
    field("Properties", extra), h("div.row", {}, h("button#test-connection", { type: "button" }, "Test connection"),
      h("button.primary", { type: "submit" }, "Create catalog")), result);
  const body = () => {
    const properties = parseProperties(extra.value);
    for (const input of providerFields.querySelectorAll("input")) {
      if (input.value.trim()) properties[input.dataset.key] = input.value.trim();
    }
    return { name: name.value.trim(), type: "relational", provider: provider.value, comment: comment.value || null,
             properties };
  };
  // Gravitino's pre-create probe: the same body, nothing stored; a failure is an error answer
  $("#test-connection", form).addEventListener("click", () => act(result,
    async () => api("POST", `${lakePath(m)}/catalogs/testConnection`, body()), "connection ok: the catalog can be created"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const created = await act(result, async () => api("POST", `${lakePath(m)}/catalogs`, body()),
                              `catalog ${name.value.trim()} created`);
    if (created) location.hash = href(m, created.catalog.name);
  });
  return form;
}

export async function catalogPage(m, c) {
  const slot = h("div");
  page(`Catalog ${c}`, [["Metalakes", "#/"], [m, href(m)], [c]], slot);
  let catalog, schemas;
  try { catalog = (await api("GET", catPath(m, c))).catalog; } catch (exc) { slot.append(errorBox(exc)); return; }
  try {  // a disabled catalog lists nothing: its page still offers to enable or drop it
    schemas = pagedList("schemas", "schemas", ["Schema"], names(await api("GET", `${catPath(m, c)}/schemas`)),
      (s) => [h("a", { href: href(m, c, s) }, s)]);
  } catch (exc) { schemas = errorBox(exc); }
  const name = h("input", { name: "name", autocomplete: "off" });
  const comment = h("input", { name: "comment" });
  const result = h("div", { id: "create-schema-result" });
  const form = h("form.card#create-schema", { "aria-label": "Create schema" }, h("h2", {}, "Create a schema"),
    field("Name", name, true), field("Comment", comment), h("button.primary", { type: "submit" }, "Create schema"), result);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const created = await act(result, () => api("POST", `${catPath(m, c)}/schemas`,
      { name: name.value.trim(), comment: comment.value || null, properties: {} }), `schema ${name.value.trim()} created`);
    if (created) location.hash = href(m, c, created.schema.name);
  });
  const force = h("input", { type: "checkbox", id: "drop-catalog-force" });
  const dropped = dropButton(`catalog ${c}`, "drop-catalog", async (res) => {
    const path = force.checked ? `${catPath(m, c)}?force=true` : catPath(m, c);
    const answer = await act(res, () => api("DELETE", path));
    if (answer?.dropped) location.hash = href(m);
    else if (answer) res.replaceChildren(h("div.error", { role: "alert" }, `catalog ${c} was not dropped`));
  }, h("label", { for: "drop-catalog-force" }, force, " force: drop it in use, with its schemas and tables"));
  const mayAlter = await mayOwn(m, [["metalake", m], ["catalog", c]]);
  const ownersOnly = `change or drop catalog ${c}: only the owner of the metalake or of the catalog may`;
  slot.replaceChildren(
    h("p.muted", {}, `${catalog.type} · provider ${catalog.provider}${catalog.comment ? " · " + catalog.comment : ""}`),
    h("div.row", {}, stateBadge(catalog, "catalog-state"),
      toggleButton("toggle-catalog", inUse(catalog), catPath(m, c), () => catalogPage(m, c))),
    schemas, form,
    h("h2", {}, "Properties"), guard(propertiesEditor("catalog-properties", catalog.properties,
      async (updates) => (await api("PUT", catPath(m, c), { updates })).catalog.properties), mayAlter, ownersOnly),
    ...(await Promise.all([tagsSection(m, "catalog", c), ownerSection(m, "catalog", c)])).flat(),
    h("h2", {}, "Audit"), auditTable(catalog.audit),
    h("h2", {}, "Danger zone"), guard(dropped, mayAlter, ownersOnly));
}
