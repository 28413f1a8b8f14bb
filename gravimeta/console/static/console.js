// gravimeta's web console: plain JavaScript modules, no build step. Every page is drawn from the REST API
// the clients use (/api/metalakes/...); the cluster page reads the operator endpoint /api/admin/locks.
// Routes live in the URL fragment (#/m/<metalake>/c/<catalog>/s/<schema>/t/<table>, #/cluster).
import { credentials, setCredentials } from "./api.js";
import { clusterPage, stopCluster } from "./cluster.js";
import { $ } from "./dom.js";
import { catalogPage, metalakePage, metalakesPage } from "./lakes.js";
import { schemaPage, tablePage } from "./tables.js";
import { drawTree, parseRoute, treeKeys } from "./tree.js";

async function route() {
  stopCluster();
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

// the header's credentials: a user name (simple) or a bearer token pasted in (OAuth)
const mode = $("#auth-mode");
const showMode = () => {
  $("#auth-user").hidden = mode.value !== "simple";
  $("#auth-token").hidden = mode.value !== "oauth";
  $("#auth-label").htmlFor = mode.value === "simple" ? "auth-user" : "auth-token";
  $("#auth-label").textContent = mode.value === "simple" ? "User" : "Token";
};
const saved = credentials();
mode.value = saved.mode;
$(saved.mode === "oauth" ? "#auth-token" : "#auth-user").value = saved.value;
showMode();
mode.addEventListener("change", showMode);
$("#auth").addEventListener("submit", (event) => {
  event.preventDefault();
  setCredentials(mode.value, $(mode.value === "oauth" ? "#auth-token" : "#auth-user").value.trim());
  route();
});
$("#tree").addEventListener("keydown", treeKeys);
window.addEventListener("hashchange", route);
route().finally(() => performance.mark("console:drawn"));  // the first page with its data (bench/first_paint.py)
