// Drawing helpers shared by the pages: an element builder, tables, paged lists, forms, and the error
// box that shows Gravitino's code, type and message next to the action that caused it.
import { ApiError } from "./api.js";

export const $ = (selector, root = document) => root.querySelector(selector);

/** h("tag.class#id", {attrs}, ...children): a small element builder (text is always escaped). */
export function h(spec, attrs = {}, ...children) {
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

const cell = (x) => h("td", {}, x ?? "");

export function grid(headers, rows, id) {
  return h("table.grid", { id },
    h("thead", {}, h("tr", {}, headers.map((x) => h("th", { scope: "col" }, x)))),
    h("tbody", {}, rows.length ? rows.map((r) => h("tr", {}, r.map(cell)))
      : h("tr", {}, h("td.muted", { colspan: headers.length }, "none"))));
}

export const PAGE_SIZE = 50;

/** A list of any length that stays responsive: a filter and one page of PAGE_SIZE rows in the page at a
 * time (10,000 names cost one array, not 10,000 rows of DOM). `row(item)` draws one item's cells. */
export function pagedList(id, label, headers, items, row, text = (x) => String(x)) {
  let shown = items;
  let start = 0;
  const filter = h("input", { type: "search", id: `${id}-filter`, placeholder: "filter by name",
                              "aria-label": `Filter ${label}`, autocomplete: "off" });
  const status = h("span.muted", { id: `${id}-status`, role: "status" });
  const prev = h("button", { type: "button", id: `${id}-prev`, "aria-label": `Previous page of ${label}` }, "‹ Prev");
  const next = h("button", { type: "button", id: `${id}-next`, "aria-label": `Next page of ${label}` }, "Next ›");
  const slot = h("div");
  const draw = () => {
    const page = shown.slice(start, start + PAGE_SIZE);
    slot.replaceChildren(grid(headers, page.map(row), id));
    status.textContent = shown.length ? `${start + 1}–${start + page.length} of ${shown.length}` : `0 of ${items.length}`;
    prev.disabled = start === 0;
    next.disabled = start + PAGE_SIZE >= shown.length;
  };
  filter.addEventListener("input", () => {
    const needle = filter.value.trim().toLowerCase();
    shown = needle ? items.filter((x) => text(x).toLowerCase().includes(needle)) : items;
    start = 0;
    draw();
  });
  prev.addEventListener("click", () => { start = Math.max(0, start - PAGE_SIZE); draw(); });
  next.addEventListener("click", () => { start += PAGE_SIZE; draw(); });
  draw();
  const controls = items.length > PAGE_SIZE ? [filter, prev, next] : [filter];
  return h("div.paged", {}, h("div.row", {}, ...controls, status), slot);
}

/** What an error says, next to the action that caused it: Gravitino's code, type and message. */
export function errorBox(exc) {
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
export async function act(slot, action, done) {
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

export function field(label, input, required) {
  input.id ||= "f-" + Math.random().toString(36).slice(2, 9);
  if (required) input.required = true;
  return h("div.field", {}, h("label", { for: input.id }, label, required ? h("span.req", { title: "required" }, " *") : ""),
           input);
}

export function parseProperties(text) {
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

export function propertiesTable(props, id) {
  return grid(["Key", "Value"], Object.entries(props || {}).sort().map(([k, v]) => [h("code", {}, k), v]), id);
}

export function auditTable(audit, id) {
  audit = audit || {};
  return grid(["Creator", "Created", "Last modifier", "Last modified"],
    [[audit.creator, audit.createTime, audit.lastModifier, audit.lastModifiedTime]], id);
}

/** A button that asks first: the first click turns "Label" into "Really label?" with a cancel. */
export function confirmButton(label, id, onConfirm, ...extra) {
  const slot = h("span");
  const button = h("button.danger", { type: "button", id }, label);
  const cancel = h("button", { type: "button", id: id ? `${id}-cancel` : undefined, onclick: () => reset() }, "Cancel");
  const reset = () => {
    button.classList.remove("confirm");
    button.textContent = label;
    cancel.remove();
  };
  button.addEventListener("click", async () => {
    if (!button.classList.contains("confirm")) {
      button.classList.add("confirm");
      button.textContent = `Really ${label[0].toLowerCase()}${label.slice(1)}?`;
      button.after(cancel);
      return;
    }
    reset();  // a refused action asks again next time
    await onConfirm(slot);
  });
  return h("span.row", {}, button, ...extra, slot);
}

/** A drop button that asks first: the first click turns it into "Really drop …?" with a cancel. */
export const dropButton = (what, id, onConfirm, ...extra) => confirmButton(`Drop ${what}`, id, onConfirm, ...extra);

export function page(title, crumbs, ...content) {
  const trail = crumbs.length ? h("div.crumbs", {}, crumbs.flatMap(([text, link], i) =>
    [i ? " › " : "", link ? h("a", { href: link }, text) : text])) : null;
  $("#main").replaceChildren(trail || "", h("h1", {}, title), ...content);
}

/** A properties table that edits: each key has a remove button, a row below adds or sets one; `send`
 * gets Gravitino's updates ([{"@type": "setProperty"|"removeProperty", ...}]) and returns the new
 * properties, which redraw the table. Reserved keys (`in-use`) are shown but not offered for change. */
export function propertiesEditor(id, props, send, reserved = ["in-use"]) {
  const slot = h("div");
  const result = h("div", { id: `${id}-result` });
  const draw = (current) => {
    const rows = Object.entries(current || {}).sort().map(([k, v]) => [h("code", {}, k), v,
      reserved.includes(k) ? h("span.muted", {}, "reserved") : h("button", { type: "button",
        "aria-label": `Remove property ${k}`, dataset: { remove: k }, onclick: () => change([
          { "@type": "removeProperty", property: k }], `property ${k} removed`) }, "Remove")]);
    slot.replaceChildren(grid(["Key", "Value", ""], rows, id));
  };
  const key = h("input", { name: "key", autocomplete: "off", "aria-label": "Property key" });
  const value = h("input", { name: "value", autocomplete: "off", "aria-label": "Property value" });
  const form = h("form.row", { id: `${id}-set`, "aria-label": "Set a property" }, key, value,
    h("button", { type: "submit" }, "Set property"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    change([{ "@type": "setProperty", property: key.value.trim(), value: value.value }], `property ${key.value.trim()} set`)
      .then((ok) => ok && form.reset());
  });
  async function change(updates, done) {
    const after = await act(result, () => send(updates), done);
    if (after !== undefined) draw(after);
    return after !== undefined;
  }
  draw(props);
  return h("div", {}, slot, form, result);
}
