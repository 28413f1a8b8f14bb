"""What filtering a list costs a user who is not a service admin: GET .../catalogs, .../tags and .../roles
of a metalake holding 10,000 of each, and GET .../tags/{tag}/objects of a tag on 800 tables, as a
service admin (the door filters nothing) and as bob, a user of the metalake whose roles let him see
almost everything: USE_CATALOG, USE_SCHEMA, SELECT_TABLE, APPLY_TAG and MANAGE_GRANTS on the
metalake, and per-object grants that his list must weigh item by item (an allow on every 10th catalog
and tag, a deny of USE_CATALOG and of APPLY_TAG on every 100th: those are hidden from him), and he owns
every 10th role. A last row: loading one catalog as bob and as carol, who holds 1,000 roles (the cap).

    .venv/bin/python bench/list_filter_cost.py [--quick] [--backends sqlite,postgresql,mysql] [--items 10000] [--rounds 5]

One replica with ONE gunicorn worker per backend; the objects are seeded straight into the store's
tables (tests/support/access_seed.py). Rounds alternate the callers, one request at a time; printed per
request: the median time of each caller (A, B), the ratio B/A per round and its median (target <= 2),
and the ratio of the worker's CPU per request (which the machine's other load does not inflate; on
PostgreSQL and MariaDB it leaves out the database server's).
"""

from __future__ import annotations

import argparse
import base64
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import (  # noqa: E402
    Http,
    cpu_seconds,
    database,
    load_note,
    make_tree,
    md_table,
    median,
    replicas,
    verdict,
    worker_pids,
)
from sqlalchemy import select  # noqa: E402

from gravimeta.store.database import create_store_engine  # noqa: E402
from gravimeta.store.models import MetalakeRow  # noqa: E402
from tests.support import access_seed  # noqa: E402

ENV = {"GRAVIMETA_AUTHORIZATION_ENABLE": "true", "GRAVIMETA_SERVICE_ADMINS": "admin",
       "GRAVIMETA_DISTRIBUTED_LOCK": "true", "GRAVIMETA_DISTRIBUTED_LOCK_BACKEND": "AUTO"}
TARGET = 2.0
TAGGED = 800
ROLES_OF_CAROL = 1000
M = "/api/metalakes/m"


def basic(user: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:x".encode()).decode()}


def setup(url: str, base: str, admin: Http, items: int) -> dict[str, int]:
    """The metalake, its users and roles; the seeded objects. Expected answer sizes, by path."""
    make_tree(admin, base, "m", "c", ["s"])
    for user in ("bob", "carol"):
        admin.ok(base, "POST", f"{M}/users", {"name": user})
    wide = [{"name": p, "condition": "allow"}
            for p in ("USE_CATALOG", "USE_SCHEMA", "SELECT_TABLE", "APPLY_TAG", "MANAGE_GRANTS")]
    admin.ok(base, "POST", f"{M}/roles", {"name": "wide", "securableObjects": [
        {"fullName": "m", "type": "metalake", "privileges": wide}]})
    admin.ok(base, "POST", f"{M}/tags", {"name": "big"})
    for name in ("per-catalog", "per-tag"):
        admin.ok(base, "POST", f"{M}/roles", {"name": name, "securableObjects": []})
    admin.ok(base, "PUT", f"{M}/permissions/users/bob/grant", {"roleNames": ["wide", "per-catalog", "per-tag"]})
    engine = create_store_engine(url)
    try:
        catalogs = access_seed.seed(engine, "m", "catalog", [f"c{i:05d}" for i in range(items)])
        tags = access_seed.seed(engine, "m", "tag", [f"t{i:05d}" for i in range(items)])
        roles = access_seed.seed(engine, "m", "role", [f"r{i:05d}" for i in range(items) if i % 10])
        roles.update(access_seed.seed(engine, "m", "role", [f"r{i:05d}" for i in range(0, items, 10)], creator="bob"))
        tables = access_seed.seed(engine, "m", "table", [f"x{i:04d}" for i in range(TAGGED)], parent=("c", "s"))
        ordered = [catalogs[n] for n in sorted(catalogs)], [tags[n] for n in sorted(tags)]
        access_seed.grant(engine, "m", "per-catalog", "CATALOG", ordered[0][::10], "USE_CATALOG")
        access_seed.grant(engine, "m", "per-catalog", "CATALOG", ordered[0][5::100], "USE_CATALOG", "DENY")
        access_seed.grant(engine, "m", "per-tag", "TAG", ordered[1][::10], "APPLY_TAG")
        access_seed.grant(engine, "m", "per-tag", "TAG", ordered[1][5::100], "APPLY_TAG", "DENY")
        with engine.connect() as conn:
            big = conn.scalar(select(access_seed.TagRow.id).join(
                MetalakeRow, MetalakeRow.id == access_seed.TagRow.metalake_id).where(
                MetalakeRow.name == "m", access_seed.TagRow.name == "big"))
        access_seed.tag_objects(engine, int(big or 0), "table", tables.values())
        access_seed.give_roles(engine, "m", "carol", sorted(roles.values())[:ROLES_OF_CAROL - 1])
    finally:
        engine.dispose()
    admin.ok(base, "PUT", f"{M}/permissions/users/carol/grant", {"roleNames": ["wide"]})
    hidden = len(range(5, items, 100))
    return {f"{M}/catalogs": items + 1 - hidden, f"{M}/tags": items + 1 - hidden,
            f"{M}/roles": len(roles) + 3, f"{M}/tags/big/objects": TAGGED}


def size(answer: dict[str, object]) -> int:
    for key in ("identifiers", "names", "metadataObjects"):
        if key in answer:
            return len(answer[key])  # type: ignore[arg-type]
    raise AssertionError(f"not a list answer: {list(answer)}")


def timed(http: Http, base: str, path: str, repeat: int, worker: int) -> tuple[float, float]:
    """The median time of `repeat` requests of `path`, one at a time, and the worker's CPU per request."""
    took = []
    cpu = cpu_seconds(worker)
    for _ in range(repeat):
        started = time.perf_counter()
        http.ok(base, "GET", path)
        took.append(time.perf_counter() - started)
    return median(took), (cpu_seconds(worker) - cpu) / repeat


def measure(backend: str, items: int, rounds: int, repeat: int) -> list[list[object]]:
    admin, bob, carol = Http(basic("admin")), Http(basic("bob")), Http(basic("carol"))
    rows: list[list[object]] = []
    with database(backend) as url, replicas(url, 1, ENV, workers=1, tag="lists-") as (server,):
        expected = setup(url, server.url, admin, items)
        for path, count in expected.items():  # the admin sees everything, bob what his roles let him
            assert size(admin.ok(server.url, "GET", path)) >= count, path
            assert size(bob.ok(server.url, "GET", path)) == count, (path, size(bob.ok(server.url, "GET", path)))
        (worker,) = worker_pids(server)
        pairs = [(f"{path.removeprefix(M + '/')} (A admin, B bob)", admin, bob, path) for path in expected]
        pairs.append(("load catalog c (A bob: 3 roles, B carol: 1,000)", bob, carol, f"{M}/catalogs/c"))
        for _, first, second, path in pairs:  # warm-up
            timed(first, server.url, path, 2, worker)
            timed(second, server.url, path, 2, worker)
        results: dict[str, list[tuple[tuple[float, float], tuple[float, float]]]] = {name: [] for name, *_ in pairs}
        for _ in range(rounds):
            for name, first, second, path in pairs:
                reps = repeat if "catalogs/c" not in path else 50
                results[name].append((timed(first, server.url, path, reps, worker),
                                      timed(second, server.url, path, reps, worker)))
    for name, measured in results.items():
        ratios = [b[0] / a[0] for a, b in measured]
        cpu = [b[1] / a[1] for a, b in measured if a[1] > 0]
        rows.append([backend, name, 1000 * median([a[0] for a, _ in measured]),
                     1000 * median([b[0] for _, b in measured]), median(ratios),
                     ", ".join(f"{r:.2f}" for r in ratios), median(cpu), verdict(median(ratios), TARGET)])
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 items, 2 rounds")
    parser.add_argument("--backends", default="sqlite,postgresql,mysql")
    parser.add_argument("--items", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    if args.quick:
        args.items, args.rounds = 1000, 2
    print(f"# filtered lists: {args.items} catalogs, tags and roles; {args.rounds} rounds x {args.repeat} requests")
    print(f"before: {load_note()}")
    rows = []
    for backend in args.backends.split(","):
        rows += measure(backend, args.items, args.rounds, args.repeat)
    print(f"after:  {load_note()}")
    print()
    print(md_table(["backend", "request", "A ms", "B ms", "B/A", "per round", "B/A worker CPU", "verdict (time)"], rows))


if __name__ == "__main__":
    main()
