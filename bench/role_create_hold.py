"""What a big role create costs the other writers: on two replicas of one store, replica A creates
roles naming 1,000 securable objects (the cap) while replica B creates tags in another metalake, one
at a time. Side by side: the objects resolved in a snapshot before the write (today) and resolved
one by one inside it (GRAVIMETA_HA_DISABLE=role_resolve_in_write, the way before).

    .venv/bin/python bench/role_create_hold.py [--backend sqlite] [--rounds 3]

Printed per variant: the role create's median time, and B's tag creates while a create runs (their
median and slowest) against B's alone (the control, same run).
"""

from __future__ import annotations

import argparse
import base64
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import Http, database, load_note, md_table, median, pct, replicas  # noqa: E402

from gravimeta.store.database import create_store_engine  # noqa: E402
from tests.support import access_seed  # noqa: E402

ENV = {"GRAVIMETA_AUTHORIZATION_ENABLE": "true", "GRAVIMETA_SERVICE_ADMINS": "admin",
       "GRAVIMETA_DISTRIBUTED_LOCK": "true", "GRAVIMETA_DISTRIBUTED_LOCK_BACKEND": "LEASE_TABLE"}
VARIANTS = {"resolved in a snapshot": {}, "resolved inside the write": {"GRAVIMETA_HA_DISABLE": "role_resolve_in_write"}}
OBJECTS = 1000


def tags_while(http: Http, base: str, busy: threading.Event, done: threading.Event, prefix: str,
               refused: list[str]) -> list[float]:
    """B's tag creates, one at a time, until `done`; the latencies of those sent while `busy` (a
    refusal is counted in `refused` and its latency kept too)."""
    took, i = [], 0
    while not done.is_set():
        during = busy.is_set()
        started = time.perf_counter()
        status, payload, _ = http.request(base, "POST", "/api/metalakes/other/tags", {"name": f"{prefix}{i}"})
        if status != 200:
            refused.append(f"HTTP {status} {str(payload)[:120]}")
        if during:
            took.append(time.perf_counter() - started)
        i += 1
    return took


def _collect(into: list[float], *args: Any) -> None:
    into.extend(tags_while(*args))


def measure(backend: str, variant: str, rounds: int) -> list[object]:
    admin = Http({"Authorization": "Basic " + base64.b64encode(b"admin:x").decode()})
    env = {**ENV, **VARIANTS[variant]}
    with database(backend) as url, replicas(url, 2, env, workers=1, tag="hold-") as (a, b):
        for metalake in ("m", "other"):
            admin.ok(b.url, "POST", "/api/metalakes", {"name": metalake})
        engine = create_store_engine(url)
        try:
            catalogs = sorted(access_seed.seed(engine, "m", "catalog", [f"k{i:04d}" for i in range(OBJECTS - 1)]))
        finally:
            engine.dispose()
        objects = [{"fullName": "m", "type": "metalake", "privileges": [{"name": "CREATE_CATALOG", "condition": "allow"}]},
                   *({"fullName": c, "type": "catalog", "privileges": [{"name": "USE_CATALOG", "condition": "allow"}]}
                     for c in catalogs)]
        creates: list[float] = []
        refused: list[str] = []
        during: list[float] = []
        alone: list[float] = []
        for r in range(rounds):
            for busy_run in (False, True):
                busy, done = threading.Event(), threading.Event()
                result: list[float] = []
                writer = threading.Thread(target=_collect, args=(result, admin, b.url, busy, done,
                                                                 f"r{r}{busy_run}-", refused))
                busy.set()
                writer.start()
                if busy_run:
                    started = time.perf_counter()
                    admin.ok(a.url, "POST", "/api/metalakes/m/roles", {"name": f"big{r}", "securableObjects": objects})
                    creates.append(time.perf_counter() - started)
                else:
                    time.sleep(2.0)  # the control: B alone for as long as a create takes, roughly
                busy.clear()
                done.set()
                writer.join(120)
                (during if busy_run else alone).extend(result)
    return [backend, variant, 1000 * median(creates), 1000 * median(alone), 1000 * median(during),
            1000 * max(during, default=float("nan")), 1000 * pct(alone, 1.0), len(during), len(refused)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="sqlite", choices=["postgresql", "mysql", "sqlite"])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"# a {OBJECTS}-object role create on replica A vs tag creates on replica B, {args.backend}, "
          f"{args.rounds} rounds")
    print(f"before: {load_note()}")
    rows = [measure(args.backend, variant, args.rounds) for variant in VARIANTS]
    print(f"after:  {load_note()}")
    print()
    print(md_table(["backend", "role's objects", "create ms", "B alone p50 ms", "B during p50 ms",
                    "B during max ms", "B alone max ms", "B writes during", "B refused"], rows))


if __name__ == "__main__":
    main()
