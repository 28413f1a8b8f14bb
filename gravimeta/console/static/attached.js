// What hangs on an object besides its own fields: its tags (its own, detachable, and those inherited
// from the objects above it) and its owner (with authorization on; off, the server keeps no owners).
import { api, enc, lakePath } from "./api.js";
import { act, confirmButton, errorBox, field, grid, h } from "./dom.js";
import { guard, mayOwn } from "./permissions.js";

/** The tags section of a catalog, schema or table (`type`, dotted `fullName` without the metalake). */
export async function tagsSection(m, type, fullName) {
  const path = `${lakePath(m)}/objects/${type}/${enc(fullName)}/tags`;
  const listSlot = h("div");
  const result = h("div", { id: "object-tags-result" });
  const choice = h("select", { name: "tag", "aria-label": "Tag to attach" });
  const change = async (body, done) => {
    if (await act(result, () => api("POST", path, { tagsToAdd: [], tagsToRemove: [], ...body }), done) !== undefined) {
      await draw();
    }
  };
  async function draw() {
    let own, all;
    try {
      own = (await api("GET", `${path}?details=true`)).tags || [];
      all = (await api("GET", `${lakePath(m)}/tags`)).names || [];
    } catch (exc) { listSlot.replaceChildren(errorBox(exc)); return; }
    listSlot.replaceChildren(grid(["Tag", "Comment", "", ""], own.map((t) => [h("code", {}, t.name), t.comment,
      t.inherited ? h("span.badge", {}, "inherited") : h("span.badge.on", {}, "own"),
      t.inherited ? "" : h("button", { type: "button", "aria-label": `Detach tag ${t.name}`, dataset: { detach: t.name },
        onclick: () => change({ tagsToRemove: [t.name] }, `tag ${t.name} detached`) }, "Detach")]), "object-tags"));
    const mine = new Set(own.filter((t) => !t.inherited).map((t) => t.name));
    choice.replaceChildren(...all.filter((n) => !mine.has(n)).map((n) => h("option", { value: n }, n)));
  }
  const form = h("form.row#attach-tag", { "aria-label": "Attach a tag" }, choice,
    h("button", { type: "submit" }, "Attach tag"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (choice.value) change({ tagsToAdd: [choice.value] }, `tag ${choice.value} attached`);
  });
  await draw();
  return [h("h2", {}, "Tags"), listSlot, form, result];
}

/** One tag's actions on the metalake page: rename in place, delete after a confirmation. Either one's
 * error shows in the row, by the action; a success redraws the list and says what was done. */
function tagActions(m, t, redraw) {
  const url = `${lakePath(m)}/tags/${enc(t.name)}`;
  const result = h("span.tag-result");
  const newName = h("input", { name: "newName", value: t.name, autocomplete: "off", size: 12,
                               "aria-label": `New name for tag ${t.name}` });
  const rename = h("form.row.inline", { "aria-label": `Rename tag ${t.name}` }, newName,
    h("button", { type: "submit" }, "Rename"));
  rename.addEventListener("submit", async (event) => {
    event.preventDefault();
    const to = newName.value.trim();
    if (await act(result, () => api("PUT", url, { updates: [{ "@type": "rename", newName: to }] })) !== undefined) {
      await redraw(`tag ${t.name} renamed to ${to}`);
    }
  });
  const remove = confirmButton(`Delete tag ${t.name}`, undefined, async () => {
    const answer = await act(result, () => api("DELETE", url));
    if (answer?.dropped) await redraw(`tag ${t.name} deleted`);
    else if (answer) result.replaceChildren(h("div.error", { role: "alert" }, `tag ${t.name} was not deleted: it no longer exists`));
  });
  return h("div.row", { dataset: { tag: t.name } }, rename, remove, result);
}

/** The metalake's tags (rename, delete), and a form that creates one. */
export async function metalakeTags(m) {
  const listSlot = h("div");
  const status = h("div", { id: "tags-result" });
  const draw = async (done) => {
    try {
      const tags = (await api("GET", `${lakePath(m)}/tags?details=true`)).tags || [];
      const allowed = await Promise.all(tags.map((t) => mayOwn(m, [["metalake", m], ["tag", t.name]])));
      listSlot.replaceChildren(grid(["Tag", "Comment", "Creator", ""], tags.map((t, i) =>
        [h("code", {}, t.name), t.comment, t.audit?.creator, guard(tagActions(m, t, draw), allowed[i],
          `rename or delete tag ${t.name}: only its owner or the metalake's may`)]), "tags"));
      status.replaceChildren(done ? h("div.done", { role: "status" }, done) : "");
    } catch (exc) { listSlot.replaceChildren(errorBox(exc)); }
  };
  const name = h("input", { name: "name", autocomplete: "off" });
  const comment = h("input", { name: "comment", autocomplete: "off" });
  const result = h("div", { id: "create-tag-result" });
  const form = h("form.card.compact#create-tag", { "aria-label": "Create tag" }, field("Tag name", name, true),
    field("Comment", comment), h("button", { type: "submit" }, "Create tag"), result);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (await act(result, () => api("POST", `${lakePath(m)}/tags`, { name: name.value.trim(),
      comment: comment.value || null, properties: {} }), `tag ${name.value.trim()} created`) !== undefined) {
      form.reset();
      await draw();
    }
  });
  await draw();
  return [h("h2", {}, "Tags"), listSlot, status, form];
}

/** The owner section: who owns the object and a form that gives it to a user or a group of the metalake
 * (a group owner confers no rights on its members: the server matches owners to the caller by name). With
 * authorization off the server answers 405 for owners, and the section says so instead. */
export async function ownerSection(m, type, fullName) {
  const path = `${lakePath(m)}/owners/${type}/${enc(fullName)}`;
  const shown = h("p#owner");
  let owner;
  try { owner = (await api("GET", path)).owner; } catch (exc) {
    if (exc.status === 405) return [h("h2", {}, "Owner"), h("p.muted#owner", {}, "No owners: authorization is off on this server.")];
    return [h("h2", {}, "Owner"), errorBox(exc)];
  }
  const draw = (o) => shown.replaceChildren(...(o ? [h("code", {}, o.name), ` (${o.type.toLowerCase()})`]
    : [h("span.muted", {}, "no owner")]));
  draw(owner);
  const kind = h("select", { name: "ownerType", "aria-label": "Owner type" },
    h("option", { value: "USER" }, "user"), h("option", { value: "GROUP" }, "group"));
  const name = h("input", { name: "owner", autocomplete: "off", "aria-label": "New owner (a user or group of the metalake)" });
  const result = h("div", { id: "set-owner-result" });
  const form = h("form.row#set-owner", { "aria-label": "Set the owner" }, kind, name,
    h("button", { type: "submit" }, "Set owner"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const given = { name: name.value.trim(), type: kind.value };
    if (await act(result, () => api("PUT", path, given), `owner set to ${given.type.toLowerCase()} ${given.name}`) !== undefined) {
      draw(given);
    }
  });
  const chain = [["metalake", m], ...(type === "metalake" ? [] : fullName.split(".").map((_, i, parts) =>
    [["catalog", "schema", "table"][i], parts.slice(0, i + 1).join(".")]))];
  guard(form, await mayOwn(m, chain), `give ${type} ${fullName} away: only an owner (of it or above it) may`);
  return [h("h2", {}, "Owner"), shown, form, result];
}
