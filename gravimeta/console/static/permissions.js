// What the caller may not do, found out before they try: with authorization on, controls that the
// server would refuse are disabled, with the reason beside them. Only public API answers are used:
// owners (405 when authorization is off), /api/admin/locks (a service admin's), and the table load's
// `?privileges=MODIFY_TABLE` check. Where the console cannot tell, controls stay enabled and the
// server's 403 shows by the action.
import { api, credentials, enc, lakePath } from "./api.js";
import { h } from "./dom.js";

/** The caller's user name as the server sees it: the simple user name, or the token's `sub`. */
export function whoAmI() {
  const { mode, value } = credentials();
  if (!value) return "anonymous";
  if (mode !== "oauth") return value;
  try {
    const payload = value.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(payload.padEnd(payload.length + (4 - payload.length % 4) % 4, "="))).sub || "?";
  } catch { return "?"; }
}

const cache = new Map();

/** {on, admin}: whether authorization is on for metalake `m`, and whether the caller is a service admin. */
async function authorization(m) {
  const key = `${JSON.stringify(credentials())}|${m}`;
  if (!cache.has(key)) {
    cache.set(key, (async () => {
      try { await api("GET", `${lakePath(m)}/owners/metalake/${enc(m)}`); } catch (exc) {
        if (exc.status === 405) return { on: false, admin: false };
      }
      try { await api("GET", "/api/admin/locks"); return { on: true, admin: true }; } catch {
        return { on: true, admin: false };
      }
    })());
  }
  return cache.get(key);
}

/** Forget what was learnt (the caller changed, or an owner was set). */
export const forgetAccess = () => cache.clear();

async function ownsAny(m, objects) {
  const me = whoAmI();
  const owners = await Promise.all(objects.map(([type, name]) =>
    api("GET", `${lakePath(m)}/owners/${type}/${enc(name)}`).then((x) => x.owner, () => null)));
  return owners.some((o) => o && o.type === "USER" && o.name === me);
}

/** Whether the caller may change (alter, drop) the last of `objects` ([[type, fullName], ...] from the
 * metalake down): authorization off, a service admin, or the owner of one of them. */
export async function mayOwn(m, objects) {
  const { on, admin } = await authorization(m);
  return !on || admin || ownsAny(m, objects);
}

/** Whether the caller may modify a table's contents (columns, properties, statistics). */
export async function mayModifyTable(m, objects, tableUrl) {
  const { on, admin } = await authorization(m);
  if (!on || admin) return true;
  try { await api("GET", `${tableUrl}?privileges=MODIFY_TABLE`); return true; } catch { return false; }
}

/** Disable every control in `el` and say why, when `allowed` is false; returns `el`. */
export function guard(el, allowed, why) {
  if (allowed) return el;
  for (const control of el.querySelectorAll("button, input, select, textarea")) control.disabled = true;
  el.prepend(h("p.denied", { role: "note" }, `${whoAmI()} may not ${why}.`));
  el.classList.add("denied-area");
  return el;
}
