// gravimeta's web console: plain JavaScript, no build step. Every page is drawn from the REST API the
// clients use (/api/metalakes/...); the cluster page reads the operator endpoint /api/admin/locks.
// Routes live in the URL fragment (#/m/<metalake>/c/<catalog>/s/<schema>/t/<table>, #/cluster).

const $ = (selector, root = document) => root.querySelector(selector);
const main = () => $("#main");
const USER_KEY = "gravimeta.console.user";
const POLL_MS = 2000;
let pollTimer = null;
let tickTimer = null;

// ------------------------------------------------------------------ the API

/** Gravitino's error answer, kept whole so the page can show code, type and message. */
class ApiError extends Error {
  constructor(status, body, method, path) {
    super(body?.message || `HTTP ${status}`);
    this.status = status;
    this.code = body?.code ?? status;
    this.type = body?.type || "HttpError";
    this.method = method;
    this.path = path;
  }
}

function authHeader() {
  const user = localStorage.getItem(USER_KEY) || "";
  if (!user) return {};
  const bytes = new TextEncoder().encode(`${user}:console`);
  return { Authorization: "Basic " + btoa(String.fromCharCode(...bytes)) };
}

async function api(method, path, body) {
  const headers = { Accept: "application/vnd.gravitino.v1+json", ...authHeader() };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (exc) {
    throw new ApiError(0, { code: "-", type: "NetworkError", message: `the server did not answer: ${exc.message}` },
                       method, path);
  }
  let data = null;
  try { data = await response.json(); } catch { /* not JSON: shown as HTTP status */ }
  if (!response.ok || (data && data.code)) throw new ApiError(response.status, data, method, path);
  return data;
}

const enc = encodeURIComponent;
const lakePath = (m) => `/api/metalakes/${enc(m)}`;
const catPath = (m, c) => `${lakePath(m)}/catalogs/${enc(c)}`;
const schemaPath = (m, c, s) => `${catPath(m, c)}/schemas/${enc(s)}`;
const tablePath = (m, c, s, t) => `${schemaPath(m, c, s)}/tables/${enc(t)}`;
const href = (...parts) => {
  const keys = ["m", "c", "s", "t"];
  return "#/" + parts.map((p, i) => `${keys[i]}/${enc(p)}`).join("/");
};

// ------------------------------------------------------------------ drawing helpers

/** h("tag.class#id", {attrs}, ...children): a small element builder (text is always escaped). */
function h(spec, attrs = {}, ...children) {
  const [, tag, rest] = spec.match(/^([a-z0-9]+)(.*)$/);
  const el = document.createElement(tag);
  for (const part of rest.match(/[.#][^.#]+/g) || []) {
    if (part[0] === ".") el.classList.add(part.slice(1)); else el.id = part.slice(1);
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function grid(headers, rows, id) {
  return h("table.grid", { id },
    h("thead", {}, h("tr", {}, headers.map((x) => h("th", { scope: "col" }, x)))),
    h("tbody", {}, rows.length ? rows.map((r) => h("tr", {}, r.map((cell) =>
      cell instanceof Node ? h("td", {}, cell) : h("td", {}, cell ?? ""))))
      : h("tr", {}, h("td.muted", { colspan: headers.length }, "none"))));
}

/** What an error says, next to the action that caused it: Gravitino's code, type and message. */
function errorBox(exc) {
  const box = h("div.error", { role: "alert" },
    h("span.code", {}, `${exc.status || ""} ${exc.code} ${exc.type}`.trim()), ": ", exc.message);
  if (exc.type === "ScopeBusyException" || exc.status === 503) {
    box.append(h("span.hint", {}, "Another structural change holds this part of the tree; this can be retried."));
  }
  if (exc.status === 502) {
    box.append(h("span.hint", {}, `Outcome unknown: the pending operation is ${exc.method} ${exc.path}; ` +
      "the server's journal finishes or undoes it (see the Cluster page for open intents)."));
  }
  return box;
}

/** Run an action: its result (done or the error) replaces the contents of `slot`. */
async function act(slot, action, done) {
  slot.replaceChildren(h("span.muted", {}, "…"));
  try {
    const result = await action();
    slot.replaceChildren(done ? h("div.done", { role: "status" }, done) : "");
    return result;
  } catch (exc) {
    if (!(exc instanceof ApiError)) throw exc;
    slot.replaceChildren(errorBox(exc));
    return undefined;
  }
}

function field(label, input, required) {
  input.id ||= "f-" + Math.random().toString(36).slice(2, 9);
  if (required) input.required = true;
  return h("div.field", {}, h("label", { for: input.id }, label, required ? h("span.req", { title: "required" }, " *") : ""),
           input);
}

function parseProperties(text) {
  const props = {};
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (!trimmed) continue;
    const at = trimmed.indexOf("=");
    if (at < 1) throw new ApiError(0, { code: "-", type: "FormError", message: `"${trimmed}" is not key=value` });
    props[trimmed.slice(0, at).trim()] = trimmed.slice(at + 1).trim();
  }
  return props;
}

function propertiesTable(props, id) {
  return grid(["Key", "Value"], Object.entries(props || {}).sort().map(([k, v]) => [h("code", {}, k), v]), id);
}

function auditTable(audit, id) {
  audit = audit || {};
  return grid(["Creator", "Created", "Last modifier", "Last modified"],
    [[audit.creator, audit.createTime, audit.lastModifier, audit.lastModifiedTime]], id);
}

/** A drop button that asks first: the first click turns it into "Really drop …?" with a cancel. */
function dropButton(what, id, onConfirm) {
  const slot = h("span");
  const button = h("button.danger", { type: "button", id }, `Drop ${what}`);
  button.addEventListener("click", async () => {
    if (!button.classList.contains("confirm")) {
      button.classList.add("confirm");
      button.textContent = `Really drop ${what}?`;
      const cancel = h("button", { type: "button", id: `${id}-cancel`, onclick: () => {
        button.classList.remove("confirm");
        button.textContent = `Drop ${what}`;
        cancel.remove();
      } }, "Cancel");
      button.after(cancel);
      return;
    }
    button.nextSibling?.id === `${id}-cancel` && button.nextSibling.remove();
    await onConfirm(slot);
  });
  return h("span.row", {}, button, slot);
}

function page(title, crumbs, ...content) {
  const trail = crumbs.length ? h("div.crumbs", {}, crumbs.flatMap(([text, link], i) =>
    [i ? " › " : "", link ? h("a", { href: link }, text) : text])) : null;
  main().replaceChildren(trail || "", h("h1", {}, title), ...content);
}

// ------------------------------------------------------------------ the tree on the left

async function drawTree(route) {
  const tree = $("#tree");
  const at = [route.m, route.c, route.s, route.t];
  const levels = [
    { kind: "metalake", list: async () => (await api("GET", "/api/metalakes")).metalakes.map((x) => x.name) },
    { kind: "catalog", list: async (m) => names(await api("GET", `${lakePath(m)}/catalogs`)) },
    { kind: "schema", list: async (m, c) => names(await api("GET", `${catPath(m, c)}/schemas`)) },
    { kind: "table", list: async (m, c, s) => names(await api("GET", `${schemaPath(m, c, s)}/tables`)) },
  ];
  async function level(depth, parents) {
    let items;
    try { items = await levels[depth].list(...parents); } catch { return null; }
    return h("ul", { role: "group" }, await Promise.all(items.map(async (name) => {
      const path = [...parents, name];
      const open = depth < 3 && at[depth] === name && parents.every((p, i) => at[i] === p);
      const current = open ? at[depth + 1] === undefined : (at[depth] === name && at.slice(depth + 1).every((x) => !x)
        && parents.every((p, i) => at[i] === p));
      const link = h("a", { href: href(...path), class: current ? "current" : null, role: "treeitem",
                            "aria-current": current ? "page" : null },
        h("span.kind", {}, levels[depth].kind[0].toUpperCase()), name);
      return h("li", {}, link, open ? await level(depth + 1, path) : null);
    })));
  }
  const top = await level(0, []);
  tree.replaceChildren(...(top ? top.childNodes : [h("li.muted", {}, "no access")]));
}

const names = (answer) => (answer.identifiers || []).map((x) => x.name);

// ------------------------------------------------------------------ pages

async function metalakesPage() {
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
    if (created) { form.reset(); await drawList(); drawTree(parseRoute()); }
  });
  page("Metalakes", [], listSlot, form);
  async function drawList() {
    let lakes;
    try { lakes = (await api("GET", "/api/metalakes")).metalakes; } catch (exc) {
      listSlot.replaceChildren(errorBox(exc));
      return;
    }
    const inUse = (m) => m.properties?.["in-use"] !== "false";
    listSlot.replaceChildren(grid(["Name", "Comment", "State", "Creator", "", ""], lakes.map((m) => [
      h("a", { href: href(m.name) }, m.name), m.comment,
      h("span", { class: `badge ${inUse(m) ? "on" : "off"}` }, inUse(m) ? "in use" : "disabled"), m.audit?.creator,
      toggleButton(m.name, inUse(m), drawList),
      dropButton(`metalake ${m.name}`, `drop-metalake-${m.name}`, async (slot) => {
        if (await act(slot, () => api("DELETE", `${lakePath(m.name)}?force=true`)) !== undefined) {
          await drawList();
          drawTree(parseRoute());
        }
      })]), "metalakes"));
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

async function metalakePage(m) {
  const slot = h("div");
  page(`Metalake ${m}`, [["Metalakes", "#/"], [m]], slot);
  let lake, catalogs;
  try {
    lake = (await api("GET", lakePath(m))).metalake;
    catalogs = (await api("GET", `${lakePath(m)}/catalogs?details=true`)).catalogs;
  } catch (exc) { slot.append(errorBox(exc)); return; }
  const filter = h("select", { id: "catalog-filter" }, h("option", { value: "" }, "all providers"),
    Object.keys(PROVIDERS).map((p) => h("option", { value: p }, p)));
  const rows = (only) => catalogs.filter((c) => !only || c.provider === only).map((c) =>
    [h("a", { href: href(m, c.name) }, c.name), c.type, c.provider, c.comment, c.audit?.creator]);
  const listSlot = h("div", {}, grid(["Catalog", "Type", "Provider", "Comment", "Creator"], rows(""), "catalogs"));
  filter.addEventListener("change", () =>
    listSlot.replaceChildren(grid(["Catalog", "Type", "Provider", "Comment", "Creator"], rows(filter.value), "catalogs")));
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

async function catalogPage(m, c) {
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
    grid(["Schema"], schemas.map((s) => [h("a", { href: href(m, c, s) }, s)]), "schemas"), form,
    h("h2", {}, "Properties"), propertiesTable(catalog.properties), h("h2", {}, "Audit"), auditTable(catalog.audit),
    h("h2", {}, "Danger zone"), dropped);
}

const COLUMN_TYPES = ["integer", "long", "short", "byte", "boolean", "float", "double", "decimal(10,2)", "string",
                      "varchar(255)", "char(10)", "date", "time", "timestamp", "binary", "uuid"];

function columnRow(index) {
  const types = h("input", { type: "text", name: `col-type-${index}`, list: "column-types", value: "string",
                             "aria-label": `Column ${index + 1} type` });
  const row = h("tr.column", {},
    h("td", {}, h("input", { type: "text", name: `col-name-${index}`, "aria-label": `Column ${index + 1} name` })),
    h("td", {}, types),
    h("td", {}, h("input", { type: "checkbox", name: `col-nullable-${index}`, checked: true,
                             "aria-label": `Column ${index + 1} nullable` })),
    h("td", {}, h("input", { type: "text", name: `col-comment-${index}`, "aria-label": `Column ${index + 1} comment` })),
    h("td", {}, h("button", { type: "button", "aria-label": `Remove column ${index + 1}`,
                              onclick: () => row.remove() }, "×")));
  return row;
}

async function schemaPage(m, c, s) {
  const slot = h("div");
  page(`Schema ${s}`, [["Metalakes", "#/"], [m, href(m)], [c, href(m, c)], [s]], slot);
  let schema, tables;
  try {
    schema = (await api("GET", schemaPath(m, c, s))).schema;
    tables = names(await api("GET", `${schemaPath(m, c, s)}/tables`));
  } catch (exc) { slot.append(errorBox(exc)); return; }
  let count = 0;
  const body = h("tbody", {}, columnRow(count++));
  const name = h("input", { name: "name", autocomplete: "off" });
  const comment = h("input", { name: "comment" });
  const result = h("div", { id: "create-table-result" });
  const form = h("form.card#create-table", { "aria-label": "Create table" }, h("h2", {}, "Create a table"),
    field("Name", name, true), field("Comment", comment),
    h("datalist#column-types", {}, COLUMN_TYPES.map((t) => h("option", { value: t }))),
    h("table.grid.columns-editor", { "aria-label": "Columns" },
      h("thead", {}, h("tr", {}, ["Column", "Type", "Nullable", "Comment", ""].map((x) => h("th", {}, x)))), body),
    h("div.row", {}, h("button#add-column", { type: "button", onclick: () => body.append(columnRow(count++)) }, "Add column"),
      h("button.primary", { type: "submit" }, "Create table")), result);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const columns = [...body.querySelectorAll("tr.column")].map((tr) => {
      const [colName, type, nullable, colComment] = tr.querySelectorAll("input");
      return { name: colName.value.trim(), type: type.value.trim(), nullable: nullable.checked,
               comment: colComment.value || null };
    }).filter((col) => col.name);
    const created = await act(result, () => api("POST", `${schemaPath(m, c, s)}/tables`,
      { name: name.value.trim(), comment: comment.value || null, columns, properties: {} }),
      `table ${name.value.trim()} created`);
    if (created) location.hash = href(m, c, s, created.table.name);
  });
  const dropped = dropButton(`schema ${s}`, "drop-schema", async (res) => {
    if (await act(res, () => api("DELETE", `${schemaPath(m, c, s)}?cascade=true`)) !== undefined) location.hash = href(m, c);
  });
  slot.replaceChildren(h("p.muted", {}, schema.comment || ""),
    grid(["Table"], tables.map((t) => [h("a", { href: href(m, c, s, t) }, t)]), "tables"), form,
    h("h2", {}, "Properties"), propertiesTable(schema.properties), h("h2", {}, "Audit"), auditTable(schema.audit),
    h("h2", {}, "Danger zone"), dropped);
}

function typeText(type) {
  return typeof type === "string" ? type : JSON.stringify(type);
}

async function tablePage(m, c, s, t) {
  const slot = h("div");
  page(`Table ${t}`, [["Metalakes", "#/"], [m, href(m)], [c, href(m, c)], [s, href(m, c, s)], [t]], slot);
  let table;
  try { table = (await api("GET", tablePath(m, c, s, t))).table; } catch (exc) { slot.append(errorBox(exc)); return; }
  const columns = (table.columns || []).map((col) => [h("code", {}, col.name), h("code", {}, typeText(col.type)),
    col.nullable === false ? "NOT NULL" : "nullable", col.autoIncrement ? "yes" : "",
    col.defaultValue ? JSON.stringify(col.defaultValue) : "", col.comment]);
  const newName = h("input", { name: "newName", autocomplete: "off", value: t });
  const renameResult = h("div", { id: "rename-table-result" });
  const rename = h("form.card#rename-table", { "aria-label": "Rename table" }, h("h2", {}, "Rename"),
    field("New name", newName, true), h("button.primary", { type: "submit" }, "Rename table"), renameResult);
  rename.addEventListener("submit", async (event) => {
    event.preventDefault();
    const done = await act(renameResult, () => api("PUT", tablePath(m, c, s, t),
      { updates: [{ "@type": "rename", newName: newName.value.trim() }] }));
    if (done) location.hash = href(m, c, s, done.table.name);
  });
  const dropped = dropButton(`table ${t}`, "drop-table", async (res) => {
    if (await act(res, () => api("DELETE", tablePath(m, c, s, t))) !== undefined) location.hash = href(m, c, s);
  });
  slot.replaceChildren(h("p.muted", {}, table.comment || ""),
    h("h2", {}, "Columns"),
    grid(["Name", "Type", "Nullability", "Auto-increment", "Default", "Comment"], columns, "columns"),
    h("h2", {}, "Properties"), propertiesTable(table.properties, "table-properties"),
    h("h2", {}, "Audit"), auditTable(table.audit, "table-audit"), rename, h("h2", {}, "Danger zone"), dropped);
}

// ------------------------------------------------------------------ the cluster page

/** "2026-12-05 01:02:03.456" (the database's clock, no zone) as milliseconds; only differences matter. */
function stamp(text) {
  if (!text || text === "None") return NaN;
  return Date.parse(text.replace(" ", "T").replace(/(\.\d{3})\d*/, "$1").replace(/([+-]\d\d:\d\d|Z)?$/, (z) => z || "Z"));
}

function seconds(ms) {
  return Number.isFinite(ms) ? `${(ms / 1000).toFixed(1)} s` : "?";
}

async function clusterPage() {
  const status = h("p.muted#cluster-status", { role: "status" }, "loading…");
  const body = h("div#cluster");
  page("Cluster", [], h("p.muted", {}, "The replicas sharing this store, the claims they hold right now and the " +
    `journal's open intents. Refreshes every ${POLL_MS / 1000} s.`), status, body);
  let claims = [];  // [{el, expiresAt, receivedAt}] counted down between polls
  async function refresh() {
    let data;
    try { data = await api("GET", "/api/admin/locks"); } catch (exc) {
      status.replaceChildren(errorBox(exc));
      return;
    }
    const now = stamp(data.databaseTime);
    const received = performance.now();
    const lock = data.distributedLock || {};
    claims = [];
    const claimRows = (data.claims || []).map((claim) => {
      const left = h("span.time-left", {}, "");
      claims.push({ el: left, leftMs: stamp(claim.expires_at) - now, received });
      return [h("code", {}, claim.path), claim.holder, claim.fence, left,
        h("span", { class: `badge ${claim.live ? "live" : "gone"}` }, claim.live ? "live" : "expired")];
    });
    body.replaceChildren(
      h("p", {}, "Cross-node lock: ", h("span", { class: `badge ${lock.enabled ? "on" : "off"}` },
        lock.enabled ? "on" : "off"), ` backend ${lock.backend || "NONE"}`),
      ...(data.warnings || []).map((w) => h("div.warning", { role: "note" },
        typeof w === "string" ? w : (w.message || JSON.stringify(w)))),
      h("h2", {}, "Replicas"),
      grid(["Node", "Host", "PID", "Lock", "Backend", "Last heartbeat", "State"], (data.nodes || []).map((n) =>
        [h("code", {}, n.node), n.host, n.pid, n.lockEnabled ? "on" : "off", n.backend, n.heartbeatAt,
         h("span", { class: `badge ${n.live ? "live" : "gone"}` }, n.live ? "live" : "gone")]), "replicas"),
      h("h2", {}, "Claims"),
      grid(["Scope", "Holder", "Fence", "Time left", "State"], claimRows, "claims"),
      h("h2", {}, "Journal intents (open)"),
      grid(["#", "Operation", "Scope", "State", "Since", "Holder", "Detail"], (data.intents || []).map((i) =>
        [i.id, i.operation, h("code", {}, i.path), i.state, i.since, i.holder, i.detail]), "intents"));
    tick();
    status.textContent = `updated ${new Date().toLocaleTimeString()}`;
  }
  function tick() {
    for (const c of claims) c.el.textContent = seconds(c.leftMs - (performance.now() - c.received));
  }
  await refresh();
  pollTimer = setInterval(refresh, POLL_MS);
  tickTimer = setInterval(tick, 250);
}

// ------------------------------------------------------------------ routing

function parseRoute() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "cluster") return { page: "cluster" };
  const route = { page: "tree" };
  for (let i = 0; i + 1 < parts.length; i += 2) route[parts[i]] = parts[i + 1];
  return route;
}

async function route() {
  clearInterval(pollTimer);
  clearInterval(tickTimer);
  const r = parseRoute();
  for (const a of document.querySelectorAll("header nav a")) a.removeAttribute("aria-current");
  $(r.page === "cluster" ? "#nav-cluster" : "#nav-metalakes").setAttribute("aria-current", "page");
  drawTree(r);
  if (r.page === "cluster") return clusterPage();
  if (r.t) return tablePage(r.m, r.c, r.s, r.t);
  if (r.s) return schemaPage(r.m, r.c, r.s);
  if (r.c) return catalogPage(r.m, r.c);
  if (r.m) return metalakePage(r.m);
  return metalakesPage();
}

const authForm = $("#auth");
$("#auth-user").value = localStorage.getItem(USER_KEY) || "";
authForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const user = $("#auth-user").value.trim();
  if (user) localStorage.setItem(USER_KEY, user); else localStorage.removeItem(USER_KEY);
  route();
});
window.addEventListener("hashchange", route);
route();
