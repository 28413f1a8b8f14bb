// The tree on the left: metalake › catalog › schema › table, the branch of the current page open. Each
// level shows at most TREE_LIMIT names (and the current one), then a link to the full, paged list.
// Keyboard: Up/Down move, Right opens an item (or enters its open branch), Left goes to its parent, Home/End, Enter.
import { api, catPath, href, lakePath, names, schemaPath } from "./api.js";
import { $, h } from "./dom.js";

const TREE_LIMIT = 100;
const LEVELS = [
  { kind: "metalake", list: async () => (await api("GET", "/api/metalakes")).metalakes.map((x) => x.name) },
  { kind: "catalog", list: async (m) => names(await api("GET", `${lakePath(m)}/catalogs`)) },
  { kind: "schema", list: async (m, c) => names(await api("GET", `${catPath(m, c)}/schemas`)) },
  { kind: "table", list: async (m, c, s) => names(await api("GET", `${schemaPath(m, c, s)}/tables`)) },
];

export async function drawTree(route) {
  const tree = $("#tree");
  const at = [route.m, route.c, route.s, route.t];
  const onPath = (parents) => parents.every((p, i) => at[i] === p);
  async function level(depth, parents) {
    let items;
    try { items = await LEVELS[depth].list(...parents); } catch { return null; }
    const chosen = items.slice(0, TREE_LIMIT);
    const here = onPath(parents) ? at[depth] : undefined;
    if (here !== undefined && items.indexOf(here) >= TREE_LIMIT) chosen.push(here);
    const entries = await Promise.all(chosen.map(async (name) => {
      const path = [...parents, name];
      const mine = here === name;
      const open = mine && depth < 3;
      const current = mine && at.slice(depth + 1).every((x) => x === undefined);
      const link = h("a", { href: href(...path), class: current ? "current" : null, role: "treeitem",
                            tabindex: "-1", "aria-level": depth + 1, "aria-current": current ? "page" : null,
                            "aria-expanded": depth < 3 ? String(open) : null },
        h("span.kind", { "aria-hidden": "true" }, LEVELS[depth].kind[0].toUpperCase()), name);
      return h("li", { role: "none" }, link, open ? await level(depth + 1, path) : null);
    }));
    if (items.length > chosen.length) {
      const more = items.length - chosen.length;
      entries.push(h("li", { role: "none" }, h("a.more", { href: parents.length ? href(...parents) : "#/",
        role: "treeitem", tabindex: "-1", "aria-level": depth + 1 }, `… ${more} more ${LEVELS[depth].kind}s`)));
    }
    return h("ul", { role: "group" }, entries);
  }
  const top = await level(0, []);
  const hadFocus = tree.contains(document.activeElement);
  tree.replaceChildren(...(top ? top.childNodes : [h("li.muted", {}, "no access")]));
  const focusable = $("a.current", tree) || $("a", tree);
  if (focusable) {
    focusable.tabIndex = 0;
    if (hadFocus) focusable.focus();
  }
}

function visibleItems() {
  return [...document.querySelectorAll("#tree a[role=treeitem]")];
}

function move(from, to) {
  if (!to) return;
  from.tabIndex = -1;
  to.tabIndex = 0;
  to.focus();
}

/** Arrow keys in the tree, as the WAI-ARIA tree pattern has them. */
export function treeKeys(event) {
  const item = event.target.closest("a[role=treeitem]");
  if (!item) return;
  const items = visibleItems();
  const at = items.indexOf(item);
  const group = item.nextElementSibling;  // the open branch under the item, if any
  const parent = item.parentElement.parentElement.closest("li")?.querySelector(":scope > a");
  const keys = {
    ArrowDown: () => move(item, items[at + 1]),
    ArrowUp: () => move(item, items[at - 1]),
    Home: () => move(item, items[0]),
    End: () => move(item, items[items.length - 1]),
    ArrowRight: () => (group ? move(item, $("a", group)) : item.click()),
    ArrowLeft: () => move(item, parent),
  };
  if (!keys[event.key]) return;
  event.preventDefault();
  keys[event.key]();
}

/** The page the URL fragment names: {page: "cluster"} or {page: "tree", m, c, s, t}. */
export function parseRoute() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "cluster") return { page: "cluster" };
  const route = { page: "tree" };
  for (let i = 0; i + 1 < parts.length; i += 2) route[parts[i]] = parts[i + 1];
  return route;
}

/** Draw the tree again for the current page (after a create or drop changed a list). */
export const redrawTree = () => drawTree(parseRoute());
