// A table's partitions: listed (paged), added with a form that follows the table's partitioning
// (identity: a value per identity column; list: lists of values; range: lower and upper bounds), and
// dropped one by one after a confirmation. A catalog without partitions says so instead.
import { api, enc } from "./api.js";
import { act, confirmButton, errorBox, field, h, pagedList } from "./dom.js";
import { exprText, typeText } from "./expressions.js";
import { guard } from "./permissions.js";

const KINDS = ["identity", "list", "range"];

function valuesText(p) {
  if (p.type === "identity") return (p.values || []).map(exprText).join(", ");
  if (p.type === "range") return `[${exprText(p.lower)}, ${exprText(p.upper)})`;
  return (p.lists || []).map(exprText).join(" | ");
}

/** The add form for a table partitioned by identity, list or range transforms; null for a table with
 * none of them (bucket or time transforms: no partition of theirs can be added by value). */
function addForm(table, send) {
  const transforms = (table.partitioning || []).filter((p) => KINDS.includes(p.strategy));
  if (!transforms.length) return null;
  const typeOf = (path) => typeText((table.columns || []).find((col) => col.name === path[0])?.type ?? "string");
  const literal = (text, path) => ({ type: "literal", dataType: typeOf(path), value: text });
  const identity = transforms.filter((p) => p.strategy === "identity").map((p) => p.fieldName);
  const listed = transforms.find((p) => p.strategy === "list")?.fieldNames || [];
  const ranged = transforms.find((p) => p.strategy === "range")?.fieldName || [];
  const kind = h("select", { name: "partitionType" },
    [...new Set(transforms.map((p) => p.strategy))].map((k) => h("option", { value: k }, k)));
  const name = h("input", { name: "partitionName", autocomplete: "off" });
  const idValues = identity.map((path) => h("input", { name: `value:${path.join(".")}`, autocomplete: "off" }));
  const lists = h("textarea", { name: "lists", rows: 2,
    placeholder: `one list a line, its values comma-separated (${listed.map((f) => f.join(".")).join(", ")})` });
  const lower = h("input", { name: "lower", autocomplete: "off" });
  const upper = h("input", { name: "upper", autocomplete: "off" });
  const groups = {
    identity: idValues.map((input, i) => field(`${identity[i].join(".")} (${typeOf(identity[i])})`, input, true)),
    list: [field("Values", lists, true)],
    range: [field(`Lower bound of ${ranged.join(".")} (${typeOf(ranged)})`, lower, true),
            field(`Upper bound (${typeOf(ranged)})`, upper, true)],
  };
  const nameField = field("Name", name);
  const show = () => {
    for (const [k, fields] of Object.entries(groups)) {
      for (const f of fields) {
        f.hidden = k !== kind.value;
        for (const input of f.querySelectorAll("input, textarea")) input.required = k === kind.value;
      }
    }
    name.required = kind.value !== "identity";  // an identity partition is named col=value by default
    name.placeholder = kind.value === "identity" ? "default: column=value/…" : "";
  };
  kind.addEventListener("change", show);
  const result = h("div", { id: "add-partition-result" });
  const form = h("form.card.compact#add-partition", { "aria-label": "Add a partition" }, h("h2", {}, "Add a partition"),
    field("Kind", kind), nameField, ...Object.values(groups).flat(), h("button.primary", { type: "submit" }, "Add partition"),
    result);
  show();
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { type: kind.value, name: name.value.trim() || undefined, properties: {} };
    if (kind.value === "identity") {
      body.fieldNames = identity;
      body.values = idValues.map((input, i) => literal(input.value, identity[i]));
    } else if (kind.value === "list") {
      body.lists = lists.value.split("\n").map((line) => line.trim()).filter(Boolean).map((line) =>
        line.split(",").map((v, i) => literal(v.trim(), listed[i] || listed[0] || [])));
    } else {
      body.lower = literal(lower.value, ranged);
      body.upper = literal(upper.value, ranged);
    }
    const added = await act(result, () => send(body), "");
    if (added) {
      form.reset();
      show();
      result.replaceChildren(h("div.done", { role: "status" }, `partition ${added.partitions[0].name} added`));
    }
  });
  return form;
}

/** The partitions section of a table page; `allowed` false disables the add form, saying `why`, and
 * offers no drop buttons. */
export async function partitionsSection(tableUrl, table, allowed, why) {
  const url = `${tableUrl}/partitions`;
  const slot = h("div#partitions-slot");
  const drop = (p) => confirmButton(`Drop partition ${p.name}`, undefined, async (res) => {
    const answer = await act(res, () => api("DELETE", `${url}/${enc(p.name)}`));
    if (answer?.dropped) await draw();
    else if (answer) res.replaceChildren(h("div.error", { role: "alert" }, `partition ${p.name} was not dropped: it no longer exists`));
  });
  async function draw() {
    let found;
    try { found = (await api("GET", `${url}?details=true`)).partitions || []; } catch (exc) {
      slot.replaceChildren(exc.status === 405 ? h("p.muted", {}, exc.message) : errorBox(exc));
      return false;
    }
    slot.replaceChildren(pagedList("partitions", "partitions", ["Partition", "Type", "Values", "Properties", ""], found,
      (p) => [h("code", {}, p.name), p.type, valuesText(p),
        Object.entries(p.properties || {}).map(([k, v]) => `${k}=${v}`).join(", "),
        allowed ? h("span", { dataset: { partition: p.name } }, drop(p)) : ""], (p) => p.name));
    return true;
  }
  const form = await draw() ? addForm(table, async (body) => {
    const added = await api("POST", url, { partitions: [body] });
    await draw();
    return added;
  }) : null;
  return [h("h2", {}, "Partitions"), slot, form && guard(form, allowed, why)];
}
