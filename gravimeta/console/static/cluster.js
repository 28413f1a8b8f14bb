// The cluster page: the replicas sharing the store (with the schema revision of their code), the live claims with a time left counted down between
// polls, the journal's open intents with what the repair would do with each (the repair's dry run) and the server's warnings,
// from the operator endpoints /api/admin/locks and /api/admin/repair-preview.
import { api } from "./api.js";
import { errorBox, grid, h, page } from "./dom.js";

const POLL_MS = 2000;
let pollTimer = null;
let tickTimer = null;

/** Stop the cluster page's timers (called on every navigation). */
export function stopCluster() {
  clearInterval(pollTimer);
  clearInterval(tickTimer);
}

/** "2026-12-05 01:02:03.456" (the database's clock, no zone) as milliseconds; only differences matter. */
function stamp(text) {
  if (!text || text === "None") return NaN;
  return Date.parse(text.replace(" ", "T").replace(/(\.\d{3})\d*/, "$1").replace(/([+-]\d\d:\d\d|Z)?$/, (z) => z || "Z"));
}

function seconds(ms) {
  return Number.isFinite(ms) ? `${(ms / 1000).toFixed(1)} s` : "?";
}

/** What `gravimeta repair` would do with an open intent now and why: the server's dry run of the repair
 * (/api/admin/repair-preview, which changes nothing), fetched with each refresh while intents are open. */
function repairOf(intent, previews) {
  const preview = previews.byId.get(intent.id);
  const text = preview ? `${preview.action}: ${preview.text}`
    : `no preview${previews.error ? ` (${previews.error})` : " yet"}`;
  if (intent.state !== "stuck") return h("span.repair-preview", {}, text);
  return h("span.repair-preview", {}, text, h("br"), h("span.muted", {},
    `decide by hand: gravimeta repair --resolve ${intent.id} applied|not-applied, or --discard ${intent.id}`));
}

async function previewsFor(intents) {
  if (!intents.length) return { byId: new Map() };
  try {
    const answer = await api("GET", "/api/admin/repair-preview");
    return { byId: new Map((answer.intents || []).map((p) => [p.id, p])) };
  } catch (exc) {
    return { byId: new Map(), error: exc.message || String(exc) };
  }
}

export async function clusterPage() {
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
    const previews = await previewsFor(data.intents || []);
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
      grid(["Node", "Host", "PID", "Lock", "Backend", "Schema revision", "Last heartbeat", "State"], (data.nodes || []).map((n) =>
        [h("code", {}, n.node), n.host, n.pid, n.lockEnabled ? "on" : "off", n.backend,
         n.schemaRevision ?? h("span.muted", { title: "a worker of code from before the registry recorded revisions" },
           "before 0018"), n.heartbeatAt,
         h("span", { class: `badge ${n.live ? "live" : "gone"}` }, n.live ? "live" : "gone")]), "replicas"),
      h("h2", {}, "Claims"),
      grid(["Scope", "Holder", "Fence", "Time left", "State"], claimRows, "claims"),
      h("h2", {}, "Journal intents (open)"),
      grid(["#", "Operation", "Scope", "State", "Since", "Holder", "Detail", "What repair would do now"],
        (data.intents || []).map((i) => [i.id, i.operation, h("code", {}, i.path), i.state, i.since, i.holder, i.detail,
          repairOf(i, previews)]), "intents"));
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
