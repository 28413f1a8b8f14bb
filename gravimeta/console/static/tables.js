// The schema and table pages: a schema's tables (paged; create with a column editor; drop) and a table's
// page (columns, properties, audit; rename; drop).
import { api, href, names, schemaPath, tablePath } from "./api.js";
import { act, auditTable, dropButton, errorBox, field, grid, h, page, pagedList, propertiesTable } from "./dom.js";

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

export async function schemaPage(m, c, s) {
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
    pagedList("tables", "tables", ["Table"], tables, (t) => [h("a", { href: href(m, c, s, t) }, t)]), form,
    h("h2", {}, "Properties"), propertiesTable(schema.properties), h("h2", {}, "Audit"), auditTable(schema.audit),
    h("h2", {}, "Danger zone"), dropped);
}

function typeText(type) {
  return typeof type === "string" ? type : JSON.stringify(type);
}

export async function tablePage(m, c, s, t) {
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
