"""Several replicas on one store with the distributed lock off: allowed (the flag stays off by default),
but never silent.

With the lock off, each replica serializes structural changes only among its own threads (TreeLock).
Two replicas on one store then run conflicting creates, renames and drops side by side, and the race
demo shows what follows (tables created twice, lost acknowledged writes). One replica with the lock
off is the documented single-node mode; a second one on the same store is a misconfiguration that
this module names wherever an operator looks: the log (at start and on every node heartbeat), the
gauge gravimeta_lock_off_peer_replicas, /api/admin/locks, `gravimeta locks` and /api/health/ready.

A replica is a node id (GRAVIMETA_NODE_ID; `gravimeta serve` gives all its workers one); gm_node has
one row per worker process, `<node id>:<pid>`, so the workers of one replica are not peers here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def replica_of(row_id: str) -> str:
    """The replica (node id) of a gm_node row id `<node id>:<pid>`."""
    return row_id.rsplit(":", 1)[0]


def lock_off_message(this: str, others: list[str]) -> str:
    shown = ", ".join(others[:10]) + (", ..." if len(others) > 10 else "")
    return (f"UNSAFE: the distributed lock is OFF on this replica ({this}) and on {len(others)} other live "
            f"replica(s) sharing its store: {shown}. Structural changes (create, rename, drop) are not "
            "serialized across replicas and can corrupt the metadata tree. Set "
            "gravitino.metadata.distributed-lock.enabled=true (GRAVIMETA_DISTRIBUTED_LOCK=true) on every "
            "replica, or run a single replica.")


def other_lock_off_replicas(this: str, peers: Iterable[tuple[str, bool]]) -> list[str]:
    """Replicas other than `this` among live peer rows (row id, lock enabled) that run with the lock off."""
    return sorted({replica_of(row) for row, enabled in peers if not enabled} - {this})


#: the revision that added gm_node.schema_revision: a row without one is a worker of older code
REVISION_COLUMN_SINCE = "0018"


def revision_text(revision: object) -> str:
    """A worker's schema revision as shown: NULL is code from before the registry recorded it."""
    return str(revision) if revision else f"before {REVISION_COLUMN_SINCE}"


def store_warnings(nodes: Iterable[Mapping[str, object]]) -> list[str]:
    """What the live worker rows of a store say is unsafe (for `gravimeta locks` and /api/admin/locks):
    several replicas with the lock off, replicas that disagree on the flag (a half-done rollout), and
    replicas whose code is at different schema revisions (a rolling upgrade not finished)."""
    off: set[str] = set()
    on: set[str] = set()
    revisions: dict[str, set[str]] = {}
    for n in nodes:
        if n["live"]:
            (on if n["lockEnabled"] else off).add(replica_of(str(n["node"])))
            revisions.setdefault(revision_text(n.get("schemaRevision")), set()).add(replica_of(str(n["node"])))
    found = []
    if len(off) > 1:
        found.append(f"UNSAFE: {len(off)} live replicas share this store with the distributed lock OFF "
                     f"({', '.join(sorted(off))}): their structural changes are not serialized across replicas")
    if off and on:
        found.append(f"UNSAFE: mixed rollout: the distributed lock is ON on {', '.join(sorted(on))} and OFF on "
                     f"{', '.join(sorted(off))}; changes are not serialized until every replica has the same setting")
    if len(revisions) > 1:
        shown = "; ".join(f"{rev} on {', '.join(sorted(replicas))}" for rev, replicas in sorted(revisions.items()))
        found.append(f"mixed rollout: live replicas run code of different schema revisions ({shown}); a replica "
                     "serves only while the store is at its code's revision: finish the upgrade (`gravimeta db "
                     "upgrade`, then every replica)")
    return found
