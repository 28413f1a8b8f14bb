// The cluster page: the replicas sharing the store (with the schema revision of their code), the live claims with a time left counted down between
// polls, the journal's open intents and the server's warnings, from the operator endpoint /api/admin/locks.
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

/** What a repair does with an open intent (the journal's rules, docs/consistency.md): the console cannot
 * know the engine's answer in advance, so it says what the repair will look at and when it runs. */
function repairOf(intent) {
  if (intent.state === "stuck") {
    return `a repair failed on it; decide by hand: gravimeta repair --resolve ${intent.id} applied|not-applied, ` +
      `or --discard ${intent.id}`;
  }
  return `run by the next change under ${intent.path} or by gravimeta repair: once the holder can no longer ` +
    `reach the engine, it looks there and finishes ${intent.operation} in the store if the engine applied it, ` +
    "else discards the intent (an intent of a catalog that is gone is discarded)";
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
      grid(["#", "Operation", "Scope", "State", "Since", "Holder", "Detail", "What repair does"],
        (data.intents || []).map((i) => [i.id, i.operation, h("code", {}, i.path), i.state, i.since, i.holder, i.detail,
          repairOf(i)]), "intents"));
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
