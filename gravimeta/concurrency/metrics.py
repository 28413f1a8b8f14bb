"""Prometheus metrics of the claim layer. prometheus_client switches to its multiprocess mode by itself
when PROMETHEUS_MULTIPROC_DIR is set (gunicorn); gauges then sum over live worker processes."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

claim_acquire_seconds = Histogram(
    "gravimeta_claim_acquire_seconds", "Time to acquire a cross-node claim, waits included.", ["backend"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
contention_waits = Counter(
    "gravimeta_claim_contention_waits_total", "Claim attempts that found a live related claim.", ["backend"]
)
scope_busy = Counter("gravimeta_claim_timeouts_total", "Claims that gave up waiting (ScopeBusy).", ["backend"])
fence_rejects = Counter(
    "gravimeta_fence_rejects_total", "Store transactions refused because their claim was lost (FenceLost)."
)
steals = Counter("gravimeta_claim_steals_total", "Expired claims taken over by another claimant.")
reclaimed = Counter("gravimeta_claims_reclaimed_total", "Expired claims deleted by the reclaimer.")
heartbeat_failures = Counter(
    "gravimeta_heartbeat_failures_total", "Lease renewals or node heartbeats that failed.", ["kind"]
)
claims_lost = Counter("gravimeta_claims_lost_total", "Claims their holder stopped trusting (not renewed in time).")
active_claims = Gauge(
    "gravimeta_active_claims", "Claims held by this process right now.", multiprocess_mode="livesum"
)
mixed_rollout_peers = Gauge(
    "gravimeta_mixed_rollout_peers", "Live peers whose distributed-lock flag differs from this node's.",
    multiprocess_mode="livemax",
)
snapshot_reads = Counter(
    "gravimeta_snapshot_read_transactions_total", "Multi-query reads run in one snapshot transaction."
)
heartbeat_runs = Counter(
    "gravimeta_heartbeat_runs_total", "Heartbeat duties that ran to completion (renewals, node heartbeats, reclaims).",
    ["task"],
)
lock_off_peer_replicas = Gauge(
    "gravimeta_lock_off_peer_replicas",
    "Other live replicas on this store that run with the distributed lock off, like this one (0 when it is on).",
    multiprocess_mode="livemax",
)
journal_stuck_intents = Gauge(
    "gravimeta_journal_stuck_intents",
    "Intents of the operation journal a repair could not settle, as of this worker's last background repair "
    "pass: they wait for an operator (gravimeta repair --resolve).",
    multiprocess_mode="livemax",
)
journal_background_repairs = Counter(
    "gravimeta_journal_background_repairs_total", "Intents the background repair judged, by outcome.", ["outcome"]
)
