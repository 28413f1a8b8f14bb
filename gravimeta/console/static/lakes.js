// The metalake and catalog pages: the metalake list (create, enable/disable, drop), a metalake's catalogs
// (filter by provider, create with a form per provider), a catalog's schemas (create, drop).
import { api, catPath, href, lakePath, names } from "./api.js";
import { act, auditTable, dropButton, errorBox, field, h, page, pagedList, parseProperties,
         propertiesTable } from "./dom.js";
import { redrawTree } from "./tree.js";

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
    const inUse = (m) => m.properties?.["in-use"] !== "false";
    listSlot.replaceChildren(pagedList("metalakes", "metalakes", ["Name", "Comment", "State", "Creator", "", ""], lakes, (m) => [
      h("a", { href: href(m.name) }, m.name), m.comment,
      h("span", { class: `badge ${inUse(m) ? "on" : "off"}` }, inUse(m) ? "in use" : "disabled"), m.audit?.creator,
      toggleButton(m.name, inUse(m), drawList),
      dropButton(`metalake ${m.name}`, `drop-metalake-${m.name}`, async (slot) => {
        if (await act(slot, () => api("DELETE", `${lakePath(m.name)}?force=true`)) !== undefined) {
          await drawList();
          redrawTree();
        }
      })], (m) => m.name));
  }
  await drawList();
}

/** Enable or disable a metalake (PATCH {"inUse": ...}); a disabled metalake refuses changes inside it. */
function toggleButton(name, inUse, redraw) {
  const slot = h("span");
  const button = h("button", { type: "button", id: `toggle-metalake-${name}` }, inUse ? "Disable" : "Enable");
  button.addEventListener("click", async () => {
    if (await act(slot, () => api("PATCH", lakePath(name), { inUse: !inUse })) !== undefined) await redraw();
  });
  return h("span.row", {}, button, slot);
}

const PROVIDERS = {
  memory: { about: "in this server's memory (lost at restart; for trying things out)", properties: [] },
  sqlite: { about: "a real SQLite file per catalog under the server's sqlite catalog root",
            properties: [["path", "catalog file, relative to the sqlite catalog root", true]] },
  hive: { about: "a Hive-like metastore reached over HTTP",
          properties: [["metastore.uris", "http://host:port[,http://host:port...]", true]] },
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
    h("h2", {}, "Properties"), propertiesTable(lake.properties),
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
    field("Properties", extra), h("button.primary", { type: "submit" }, "Create catalog"), result);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const created = await act(result, async () => {
      const properties = parseProperties(extra.value);
      for (const input of providerFields.querySelectorAll("input")) {
        if (input.value.trim()) properties[input.dataset.key] = input.value.trim();
      }
      return api("POST", `${lakePath(m)}/catalogs`, { name: name.value.trim(), type: "relational",
        provider: provider.value, comment: comment.value || null, properties });
    }, `catalog ${name.value.trim()} created`);
    if (created) location.hash = href(m, created.catalog.name);
  });
  return form;
}

export async function catalogPage(m, c) {
  const slot = h("div");
  page(`Catalog ${c}`, [["Metalakes", "#/"], [m, href(m)], [c]], slot);
  let catalog, schemas;
  try {
    catalog = (await api("GET", catPath(m, c))).catalog;
    schemas = names(await api("GET", `${catPath(m, c)}/schemas`));
  } catch (exc) { slot.append(errorBox(exc)); return; }
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
  const dropped = dropButton(`catalog ${c}`, "drop-catalog", async (res) => {
    if (await act(res, () => api("DELETE", `${catPath(m, c)}?force=true`)) !== undefined) location.hash = href(m);
  });
  slot.replaceChildren(
    h("p.muted", {}, `${catalog.type} · provider ${catalog.provider}${catalog.comment ? " · " + catalog.comment : ""}`),
    pagedList("schemas", "schemas", ["Schema"], schemas, (s) => [h("a", { href: href(m, c, s) }, s)]), form,
    h("h2", {}, "Properties"), propertiesTable(catalog.properties), h("h2", {}, "Audit"), auditTable(catalog.audit),
    h("h2", {}, "Danger zone"), dropped);
}
