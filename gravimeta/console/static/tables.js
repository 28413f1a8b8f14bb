// The schema and table pages: a schema's tables (paged; create with a column editor; drop) and a table's
// page (columns, layout, indexes, properties, tags, owner, partitions (partitions.js), statistics, audit;
// rename; drop).
import { api, enc, href, lakePath, names, schemaPath, tablePath } from "./api.js";
import { ownerSection, tagsSection } from "./attached.js";
import { guard, mayModifyTable, mayOwn } from "./permissions.js";
import { act, auditTable, dropButton, errorBox, field, grid, h, page, pagedList, propertiesEditor } from "./dom.js";
import { exprText, transformText, typeText } from "./expressions.js";
import { partitionsSection } from "./partitions.js";

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
  const mayAlter = await mayOwn(m, [["metalake", m], ["catalog", c], ["schema", `${c}.${s}`]]);
  const ownersOnly = `change or drop schema ${s}: only the owner of the metalake, the catalog or the schema may`;
  slot.replaceChildren(h("p.muted", {}, schema.comment || ""),
    pagedList("tables", "tables", ["Table"], tables, (t) => [h("a", { href: href(m, c, s, t) }, t)]), form,
    h("h2", {}, "Properties"), guard(propertiesEditor("schema-properties", schema.properties,
      async (updates) => (await api("PUT", schemaPath(m, c, s), { updates })).schema.properties), mayAlter, ownersOnly),
    ...(await Promise.all([tagsSection(m, "schema", `${c}.${s}`), ownerSection(m, "schema", `${c}.${s}`)])).flat(), h("h2", {}, "Audit"), auditTable(schema.audit),
    h("h2", {}, "Danger zone"), guard(dropped, mayAlter, ownersOnly));
}

const COLUMN_ACTIONS = {
  add: { label: "Add a column", fields: ["name", "type", "comment", "nullable"] },
  rename: { label: "Rename", fields: ["column", "newName"] },
  type: { label: "Change the type", fields: ["column", "type"] },
  comment: { label: "Change the comment", fields: ["column", "comment"] },
  drop: { label: "Drop", fields: ["column"] },
};

/** One form for every column change; the action picks which fields it needs. */
function alterColumnForm(columns, send) {
  const inputs = {
    column: h("select", { name: "column" }),
    name: h("input", { name: "name", autocomplete: "off" }),
    newName: h("input", { name: "newName", autocomplete: "off" }),
    type: h("input", { name: "type", list: "column-types", value: "string", autocomplete: "off" }),
    comment: h("input", { name: "comment", autocomplete: "off" }),
    nullable: h("input", { name: "nullable", type: "checkbox", checked: true }),
  };
  const labels = { column: "Column", name: "New column's name", newName: "New name", type: "Type",
                   comment: "Comment", nullable: "Nullable" };
  const fields = Object.fromEntries(Object.entries(inputs).map(([k, input]) => [k, field(labels[k], input)]));
  const action = h("select", { name: "action" },
    Object.entries(COLUMN_ACTIONS).map(([k, a]) => h("option", { value: k }, a.label)));
  const setColumns = (cols) => inputs.column.replaceChildren(...cols.map((c) => h("option", { value: c.name }, c.name)));
  setColumns(columns);
  const show = () => {
    for (const [k, f] of Object.entries(fields)) f.hidden = !COLUMN_ACTIONS[action.value].fields.includes(k);
  };
  action.addEventListener("change", show);
  show();
  const result = h("div", { id: "alter-column-result" });
  const form = h("form.card.compact#alter-column", { "aria-label": "Alter a column" }, h("h2", {}, "Alter a column"),
    field("Change", action), ...Object.values(fields), h("datalist#column-types", {}, COLUMN_TYPES.map((t) => h("option", { value: t }))),
    h("button.primary", { type: "submit" }, "Apply"), result);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const col = [inputs.column.value];
    const update = {
      add: () => ({ "@type": "addColumn", fieldName: [inputs.name.value.trim()], type: inputs.type.value.trim(),
                    comment: inputs.comment.value || null, nullable: inputs.nullable.checked }),
      rename: () => ({ "@type": "renameColumn", oldFieldName: col, newFieldName: inputs.newName.value.trim() }),
      type: () => ({ "@type": "updateColumnType", fieldName: col, newType: inputs.type.value.trim() }),
      comment: () => ({ "@type": "updateColumnComment", fieldName: col, newComment: inputs.comment.value || null }),
      drop: () => ({ "@type": "deleteColumn", fieldName: col, ifExists: false }),
    }[action.value]();
    const after = await act(result, () => send([update]), `column ${update.fieldName?.[0] || update.oldFieldName[0]} changed`);
    if (after) setColumns(after.columns || []);
  });
  return form;
}

/** The table's statistics, and a form that sets a custom one. */
async function statisticsSection(m, c, s, t) {
  const statsPath = `${lakePath(m)}/objects/table/${enc(`${c}.${s}.${t}`)}/statistics`;
  const stats = h("div");
  const drawStats = async () => {
    try {
      const found = (await api("GET", statsPath)).statistics || [];
      stats.replaceChildren(grid(["Statistic", "Value", "Modifiable", "Last modified"], found.map((x) =>
        [h("code", {}, x.name), JSON.stringify(x.value), x.modifiable ? "yes" : "no",
         x.audit?.lastModifiedTime || x.audit?.createTime]), "statistics"));
    } catch (exc) { stats.replaceChildren(errorBox(exc)); }
  };
  await drawStats();
  const name = h("input", { name: "statName", value: "custom-", autocomplete: "off" });
  const value = h("input", { name: "statValue", autocomplete: "off", placeholder: "JSON (42, \"text\", true) or text" });
  const result = h("div", { id: "set-statistic-result" });
  const form = h("form.card#set-statistic", { "aria-label": "Set a statistic" }, field("Statistic (custom-…)", name, true),
    field("Value", value, true), h("button", { type: "submit" }, "Set statistic"), result);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    let parsed;
    try { parsed = JSON.parse(value.value); } catch { parsed = value.value; }
    if (await act(result, () => api("PUT", statsPath, { updates: { [name.value.trim()]: parsed } }),
                  `statistic ${name.value.trim()} set`) !== undefined) await drawStats();
  });
  return [h("h2", {}, "Statistics"), stats, form];
}

export async function tablePage(m, c, s, t) {
  const slot = h("div");
  page(`Table ${t}`, [["Metalakes", "#/"], [m, href(m)], [c, href(m, c)], [s, href(m, c, s)], [t]], slot);
  let table;
  try { table = (await api("GET", tablePath(m, c, s, t))).table; } catch (exc) { slot.append(errorBox(exc)); return; }
  const alter = async (updates) => (await api("PUT", tablePath(m, c, s, t), { updates })).table;
  const columnsSlot = h("div");
  const drawColumns = (tbl) => columnsSlot.replaceChildren(
    grid(["Name", "Type", "Nullability", "Auto-increment", "Default", "Comment"], (tbl.columns || []).map((col) => [
      h("code", {}, col.name), h("code", {}, typeText(col.type)), col.nullable === false ? "NOT NULL" : "nullable",
      col.autoIncrement ? "yes" : "", exprText(col.defaultValue), col.comment]), "columns"));
  drawColumns(table);
  const alterColumns = alterColumnForm(table.columns || [], async (updates) => {
    const after = await alter(updates);
    drawColumns(after);
    return after;
  });
  const dist = table.distribution || {};
  const layout = grid(["Partitioning", "Distribution", "Sort orders"], [[
    (table.partitioning || []).map(transformText).join(", ") || "none",
    dist.strategy && dist.strategy !== "none" ? `${dist.strategy}(${exprText(dist.funcArgs || [])}) into ${dist.number}` : "none",
    (table.sortOrders || []).map((o) => `${exprText(o.sortTerm)} ${o.direction} ${o.nullOrdering}`).join(", ") || "none",
  ]], "table-layout");
  const indexes = grid(["Index", "Type", "Columns"], (table.indexes || []).map((i) =>
    [i.name, i.indexType, (i.fieldNames || []).map((f) => f.join(".")).join(", ")]), "table-indexes");
  const newName = h("input", { name: "newName", autocomplete: "off", value: t });
  const renameResult = h("div", { id: "rename-table-result" });
  const rename = h("form.card#rename-table", { "aria-label": "Rename table" }, h("h2", {}, "Rename"),
    field("New name", newName, true), h("button.primary", { type: "submit" }, "Rename table"), renameResult);
  rename.addEventListener("submit", async (event) => {
    event.preventDefault();
    const done = await act(renameResult, () => alter([{ "@type": "rename", newName: newName.value.trim() }]));
    if (done) location.hash = href(m, c, s, done.name);
  });
  const dropped = dropButton(`table ${t}`, "drop-table", async (res) => {
    if (await act(res, () => api("DELETE", tablePath(m, c, s, t))) !== undefined) location.hash = href(m, c, s);
  });
  const objects = [["metalake", m], ["catalog", c], ["schema", `${c}.${s}`], ["table", `${c}.${s}.${t}`]];
  const [mayModify, mayDrop] = await Promise.all([mayModifyTable(m, objects, tablePath(m, c, s, t)), mayOwn(m, objects)]);
  const modifiers = `change table ${t}: it needs MODIFY_TABLE or ownership`;
  for (const part of [alterColumns, rename]) guard(part, mayModify, modifiers);
  slot.replaceChildren(h("p.muted", {}, table.comment || ""),
    h("h2", {}, "Columns"), columnsSlot, alterColumns, h("h2", {}, "Layout"), layout, h("h2", {}, "Indexes"), indexes,
    h("h2", {}, "Properties"), guard(propertiesEditor("table-properties", table.properties,
      async (updates) => (await alter(updates)).properties), mayModify, modifiers),
    ...(await Promise.all([tagsSection(m, "table", `${c}.${s}.${t}`), ownerSection(m, "table", `${c}.${s}.${t}`),
      partitionsSection(tablePath(m, c, s, t), table, mayModify, modifiers), statisticsSection(m, c, s, t)])).flat(),
    h("h2", {}, "Audit"), auditTable(table.audit, "table-audit"), rename,
    h("h2", {}, "Danger zone"), guard(dropped, mayDrop, `drop table ${t}: only an owner (of it or above it) may`));
  const statistics = slot.querySelector("#set-statistic");
  if (statistics) guard(statistics, mayModify, modifiers);
}
