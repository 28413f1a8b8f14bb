"""The end of a soak, fence half: no fence an engine has accepted is ever granted again.

The engines gravimeta owns record, per identity key (gravimeta/dispatch/engine_keys.py), the highest
token they accepted: a sqlite catalog in its file's `gravimeta_fences` table (connectors/sqlite/fences.py),
the hive stub under "fences" in its metastore.json (connectors/hive_stub/storage.py). The store grants
tokens from the anchor counters (gm_claim_anchor, gravimeta/concurrency/lease_grant.py): a claim under
metalake M gets max(anchor '/', anchor '/M') + 1, a root claim the highest of all anchors + 1. A failover
onto a standby that lacks a committed bump puts a counter back (docs/ha.md "Why the standby must be
synchronous"); the next grants on that metalake then carry tokens an engine has already accepted from
another holder, and the engine, which admits a token equal to the highest it saw (one holder calls
several times), lets both holders through.

Two checks. Both can miss a re-issue; neither can report one that did not happen.

1. **The grant ledger.** `install` puts a test-only trigger on gm_scope_lease: each grant (every lease
   claim inserts its row there, in the claim's transaction) also writes (scope, holder, fence, metalake id,
   clock_timestamp()) to gm_test_fence_grant, in the same transaction. So the ledger on the final store
   holds exactly the grants that store has: a grant lost at a failover leaves no row, and a token it
   handed out shows up only if it is granted again. Meanwhile a `FenceWatch` reads the engines' records
   every few tenths of a second and notes, per key, when it first found each higher token (the time after
   the read ended: the engine accepted it before then). The rule checked: a grant whose trigger ran after
   an engine was found holding token F on a key of the same metalake (any metalake, for a root grant)
   has a fence above F. It holds in a store that loses nothing: F was granted by a claim that committed
   before the engine saw it, the later claim locked an anchor row the earlier one had locked (both lock
   their metalake's row, or the root's) and so read the counter after that commit. A grant at F is a
   re-issue; below F, the counter went back.
   The metalake is the *identity* (its store id), not the name: metalakes are renamed (the soak swaps
   their names), and the anchor is named by the name. The trigger maps the scope's first level to
   gm_metalake.id inside the claim's transaction, where no rename is in flight (a rename holds the root
   claim, which excludes every other claim); an engine key names its catalog by id, and a catalog stays
   in its metalake. A grant under a name that denotes no metalake (one being created) is in no family
   and is not checked. The database server and the watcher share the machine's clock (the soak runs both
   on loopback). Missed: a token an engine accepted after the watcher's last read before its re-grant.
2. **The counters at the end**, when no grant is racing: for every key an engine holds F on, the anchor
   counters its next grant reads (the root's, its metalake's under its current name) stand at F or above,
   so the next grant is above F. This catches a counter put back on a metalake that saw no grant since.

PostgreSQL only (the trigger). tests/ha/test_fence_reissue_check.py shows both checks fail when an
anchor counter is put back.
"""

from __future__ import annotations

import bisect
import json
import sqlite3
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Engine, text

from connectors.sqlite.fences import TABLE as SQLITE_FENCES

LEDGER = "gm_test_fence_grant"
_INSTALL = (
    f"CREATE TABLE IF NOT EXISTS {LEDGER} (scope_path text NOT NULL, holder_id text NOT NULL, "
    "fence bigint NOT NULL, metalake_id bigint, granted_at double precision NOT NULL)",
    f"""CREATE OR REPLACE FUNCTION gm_test_log_grant() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {LEDGER} (scope_path, holder_id, fence, metalake_id, granted_at)
    VALUES (NEW.scope_path, NEW.holder_id, NEW.fence,
            (SELECT id FROM gm_metalake WHERE NEW.scope_path <> '/' AND name = split_part(NEW.scope_path, '/', 2)),
            extract(epoch FROM clock_timestamp()));
    RETURN NULL;
END
$$""",
    "DROP TRIGGER IF EXISTS gm_test_log_grant ON gm_scope_lease",
    "CREATE TRIGGER gm_test_log_grant AFTER INSERT ON gm_scope_lease FOR EACH ROW EXECUTE FUNCTION gm_test_log_grant()",
)


def install(engine: Engine) -> None:
    """Start the grant ledger on a migrated PostgreSQL store (test-only: the trigger writes on every grant)."""
    with engine.begin() as conn:
        for statement in _INSTALL:
            conn.exec_driver_sql(statement)


@dataclass(frozen=True)
class EngineFile:
    """Where an engine keeps its fences: kind 'sqlite' (a catalog file) or 'hive' (the stub's metastore.json)."""

    label: str
    kind: str
    path: Path


def read_fences(source: EngineFile) -> dict[str, int]:
    """The highest token the engine accepted per key, as its file holds it now ({} before it exists)."""
    if not source.path.exists():
        return {}
    if source.kind == "hive":
        return {str(k): int(v) for k, v in json.loads(source.path.read_text(encoding="utf-8")).get("fences", {}).items()}
    conn = sqlite3.connect(f"{source.path.as_uri()}?mode=ro", uri=True, timeout=2)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (SQLITE_FENCES,)).fetchone():
            return {}
        return {str(k): int(v) for k, v in conn.execute(f"SELECT scope, fence FROM {SQLITE_FENCES}")}
    finally:
        conn.close()


@dataclass(frozen=True)
class Seen:
    """`engine` held `fence` (or more) on `key` by `at` (time.time())."""

    engine: str
    key: str
    fence: int
    at: float


@dataclass(frozen=True)
class Grant:
    scope: str
    holder: str
    fence: int
    metalake_id: int | None
    at: float


@dataclass
class FenceReport:
    problems: list[str]
    keys: int
    seen: int
    samples: int
    grants: int
    unresolved: int
    unreadable: Counter[str] = field(default_factory=Counter)

    def summary(self) -> str:
        verdict = "no fence re-issued" if not self.problems else f"{len(self.problems)} FENCE PROBLEM(S)"
        extra = f"; {self.unresolved} key(s) of catalogs gone from the store not checked" if self.unresolved else ""
        misses = f"; unreadable reads: {dict(self.unreadable)}" if self.unreadable else ""
        return (f"fence check: {self.keys} engine keys, {self.seen} rises seen in {self.samples} reads, "
                f"{self.grants} grants in the ledger: {verdict}{extra}{misses}")


class FenceWatch:
    """Reads the engines' fence records again and again; then checks them against the ledger and counters."""

    def __init__(self, sources: Callable[[], Iterable[EngineFile]]):
        self.sources = sources
        self.seen: list[Seen] = []
        self.samples = 0
        self.unreadable: Counter[str] = Counter()
        self._highest: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def sample(self) -> None:
        """One read of every engine: each token above what was found before is noted with the read's end."""
        with self._lock:
            for source in self.sources():
                try:
                    fences = read_fences(source)
                except (OSError, ValueError, sqlite3.Error) as exc:  # busy, or a file being replaced: next read
                    self.unreadable[f"{source.label} {type(exc).__name__}"] += 1
                    continue
                at = time.time()
                for key, fence in fences.items():
                    if fence > self._highest.get((source.label, key), -1):
                        self._highest[(source.label, key)] = fence
                        self.seen.append(Seen(source.label, key, fence, at))
            self.samples += 1

    def watch(self, stop: threading.Event, every: float = 0.25) -> None:
        """A thread's body: sample every `every` seconds until `stop`."""
        while not stop.wait(every):
            self.sample()

    def check(self, engine: Engine) -> FenceReport:
        """Both checks of the module docstring against the store behind `engine`; the problems found."""
        with engine.connect() as conn:
            catalogs = {row.id: (_digits(row.create_time), row.metalake_id)
                        for row in conn.execute(text("SELECT id, create_time, metalake_id FROM gm_catalog"))}
            metalakes = dict(conn.execute(text("SELECT id, name FROM gm_metalake")).all())
            anchors = dict(conn.execute(text("SELECT anchor, fence FROM gm_claim_anchor")).all())
            grants = [Grant(*row) for row in conn.execute(text(
                f"SELECT scope_path, holder_id, fence, metalake_id, granted_at FROM {LEDGER} ORDER BY granted_at"))]
        by_family: dict[int, list[Seen]] = defaultdict(list)
        unresolved = set()
        for seen in self.seen:
            family = _family(seen.key, catalogs)
            if family is None:
                unresolved.add(seen.key)
            else:
                by_family[family].append(seen)
        problems = []
        for family, seen_list in by_family.items():
            seen_list.sort(key=lambda s: s.at)
            times = [s.at for s in seen_list]
            top, highest = [], None  # highest[i]: the highest token seen in seen_list[:i + 1]
            for s in seen_list:
                highest = s if highest is None or s.fence > highest.fence else highest
                top.append(highest)
            for grant in grants:
                if grant.scope != "/" and grant.metalake_id != family:
                    continue
                i = bisect.bisect_left(times, grant.at) - 1  # the reads that ended before the grant's trigger ran
                if i >= 0 and grant.fence <= top[i].fence:
                    s = top[i]
                    how = "re-issued" if grant.fence == s.fence else "below it: the counter went back"
                    problems.append(f"fence {grant.fence} granted on {grant.scope} to {grant.holder} at "
                                    f"{_clock(grant.at)}, after {s.engine} had accepted fence {s.fence} on {s.key} "
                                    f"(found by {_clock(s.at)}): {how}")
            name = metalakes.get(family)
            counter = max(anchors.get("/", 0), anchors.get(f"/{name}", 0) if name is not None else 0)
            finals: dict[tuple[str, str], Seen] = {(s.engine, s.key): s for s in seen_list}  # sorted: the last
            for s in finals.values():
                if counter < s.fence:
                    problems.append(f"the anchor counters for {s.key} (metalake {name!r}) stand at {counter}, below "
                                    f"fence {s.fence} that {s.engine} accepted: the next grants would re-issue it")
        return FenceReport(problems, len(self._highest), len(self.seen), self.samples, len(grants),
                           len(unresolved), Counter(self.unreadable))


def _digits(value: str | None) -> str:
    return "".join(ch for ch in value or "" if ch.isdigit())


def _family(key: str, catalogs: dict[int, tuple[str, int]]) -> int | None:
    """The metalake id of the catalog an identity key names ('/c<id>.<create time digits>/...'), or None
    when the store no longer has that catalog (its keys get no grants any more)."""
    first = key.strip("/").split("/")[0]
    row_id, dot, digits = first[1:].partition(".")
    if not first.startswith("c") or not dot or not row_id.isdigit():
        return None
    catalog = catalogs.get(int(row_id))
    return catalog[1] if catalog is not None and catalog[0] == digits else None


def _clock(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at)) + f".{int(at * 1000) % 1000:03d}"
