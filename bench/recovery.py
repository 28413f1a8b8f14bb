"""6. Recovery: time from `kill -9` of a claim holder to the next successful claim of the same scope,
against the lease TTL.

    .venv/bin/python bench/recovery.py [--quick] [--trials 4] [--ttls 2000,5000] [--backend postgresql]

A holder is a separate process that claims /m/c/s (LEASE_TABLE, with its heartbeat renewing every
TTL/3, exactly as a gunicorn worker does; or PG_ADVISORY, holding the locks in an open store
transaction), says so, and sleeps. After a random part of one renewal period it is killed with
SIGKILL and this process claims the same scope, timing kill -> granted. For the lease, the expected
figure lies between 2/3 TTL and TTL (the row expires TTL after the last renewal) plus at most one
backoff step (<= 100 ms); for advisory locks the database ends the dead session's transaction as soon
as the socket closes. TTLs and backends are interleaved trial by trial.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import ROOT, database, load_note, md_table, median  # noqa: E402

from gravimeta.concurrency.pg_advisory import AdvisoryBackend  # noqa: E402
from gravimeta.concurrency.scope_lease import LeaseBackend  # noqa: E402
from gravimeta.entities import NameIdentifier  # noqa: E402
from gravimeta.store.database import create_store_engine  # noqa: E402

SCOPE = ("m", "c", "s")

HOLDER = """
import sys, time
sys.path.insert(0, {root!r})
from gravimeta.store.database import create_store_engine
from gravimeta.entities import NameIdentifier
url, backend, ttl = sys.argv[1], sys.argv[2], int(sys.argv[3])
engine = create_store_engine(url)
scope = NameIdentifier.of(*{scope!r})
if backend == "LEASE_TABLE":
    from gravimeta.concurrency.scope_lease import LeaseBackend
    claim = LeaseBackend(engine, "bench-holder", ttl_ms=ttl, timeout_ms=60000).claim(scope)
    print("claimed", claim.fence, flush=True)
    time.sleep(3600)
else:
    from gravimeta.concurrency.pg_advisory import AdvisoryBackend
    claim = AdvisoryBackend(engine, 60000).claim(scope)  # its transaction holds the locks
    print("claimed", flush=True)
    time.sleep(3600)
"""


def claim_once(url: str, backend: str, ttl_ms: int) -> float:
    """Claim SCOPE now (waiting up to 5 TTL); the perf_counter() at which it was granted (the claim is
    released at once)."""
    engine = create_store_engine(url)
    scope = NameIdentifier.of(*SCOPE)
    try:
        if backend == "LEASE_TABLE":
            lease = LeaseBackend(engine, "bench-next", ttl_ms=ttl_ms, timeout_ms=5 * ttl_ms + 5000)
            claim = lease.claim(scope)
            granted = time.perf_counter()
            claim.release()
            lease.heartbeat.stop()
        else:
            advisory = AdvisoryBackend(engine, 5 * ttl_ms + 5000).claim(scope)
            granted = time.perf_counter()
            advisory.release()
        return granted
    finally:
        engine.dispose()


def trial(url: str, backend: str, ttl_ms: int) -> tuple[float, float]:
    """(seconds from kill -9 to the next grant, seconds the holder lived after claiming)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER.format(root=str(ROOT), scope=SCOPE), url, backend, str(ttl_ms)],
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        assert holder.stdout is not None
        line = holder.stdout.readline()
        if not line.startswith("claimed"):
            raise RuntimeError(f"holder did not claim: {line!r}")
        lived = random.uniform(0.2, 1.2) * ttl_ms / 3000  # somewhere in a renewal period (after >= 1 renewal mostly)
        time.sleep(lived)
        os.kill(holder.pid, signal.SIGKILL)
        killed = time.perf_counter()
        holder.wait(10)
        return claim_once(url, backend, ttl_ms) - killed, lived
    finally:
        if holder.poll() is None:
            os.killpg(holder.pid, signal.SIGKILL)
            holder.wait(10)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 trials, TTLs 1000,2000 (< 40 s)")
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--ttls", default="2000,5000", help="lease TTLs in ms")
    parser.add_argument("--backend", default="postgresql", choices=["postgresql", "mysql", "sqlite"])
    args = parser.parse_args(argv)
    if args.quick:
        args.trials, args.ttls = 2, "1000,2000"
    ttls = [int(t) for t in args.ttls.split(",")]
    variants = [("LEASE_TABLE", t) for t in ttls]
    if args.backend == "postgresql":
        variants.append(("PG_ADVISORY", ttls[0]))
    print(f"# recovery on {args.backend}: {args.trials} trials per variant")
    print(f"before: {load_note()}")
    results: dict[tuple[str, int], list[float]] = {v: [] for v in variants}
    with database(args.backend) as url:
        for _ in range(args.trials):
            for backend, ttl in variants:
                results[(backend, ttl)].append(trial(url, backend, ttl)[0])
    print(f"after:  {load_note()}")
    rows = []
    for (backend, ttl), took in results.items():
        ttl_cell = f"{ttl} ms" if backend == "LEASE_TABLE" else "n/a (ends with the session)"
        rows.append([backend, ttl_cell, 1000 * median(took), 1000 * min(took), 1000 * max(took),
                     median(took) / (ttl / 1000) if backend == "LEASE_TABLE" else ""])
    print()
    print(md_table(["backend", "TTL", "kill -9 -> next claim, median ms", "min ms", "max ms", "median / TTL"], rows))


if __name__ == "__main__":
    main()
