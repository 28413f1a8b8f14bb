"""A history of structural requests and a checker for the final state they must have produced.

Used by `gravimeta demo race` and by the chaos tests (tests/chaos). Every request is recorded with
monotonic start/end timestamps (CLOCK_MONOTONIC is system-wide on Linux, so histories from several
client threads or processes on one machine compare), its HTTP status and its body.

Outcomes: `ok` (2xx and it took effect), `noop` (a drop answered `dropped: false`), `failed` (a
definite refusal: 4xx, ScopeBusy, FenceLost: nothing was applied), `uncertain` (no answer, 500, 502,
other 503s: it may or may not have been applied).

Invariants checked against a FinalState (read after the load has stopped):
- duplicate:  a name listed twice under one parent (API or SQL rows), or one name created twice: two
              acknowledged creates/renames onto the same name with no acknowledged removal of it that
              could be ordered between them (no linearizable history has that: the second must fail);
- orphan:     a table row whose schema row is missing or not listed (SQL), or an API/SQL mismatch;
- divergence: for catalogs with an external engine (`sqlite`), the engine's schemas/tables differ
              from the store's; memory catalogs are skipped with a note (the engine is a per-process
              mirror of the store, there is nothing external to compare);
- lost-write: an acknowledged create/rename whose result is missing at the end, and no acknowledged
              drop/rename/cascade drop that could be ordered after it (its end after the create's
              start) explains the removal. Uncertain operations that might explain it are named in
              the detail but do not excuse it.

With `uncertain_may_apply=True` (the soak, tests/chaos/soak.py, whose nemesis kills workers mid-request)
an uncertain removal is what it is there: an operation that may have taken effect at some point of its
interval (its client saw the connection die or a 5xx: the request was over by then). It then explains a
missing result and may be ordered between two acknowledged creates. The strict default stays for runs without a nemesis, where an uncertain answer is itself a
finding; every other check is the same in both modes.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

DEFINITE_FAILURE_TYPES = {"ScopeBusyException", "FenceLostException", "OptimisticLockException"}
KINDS = ("create_schema", "drop_schema", "create_table", "drop_table", "rename_table")


@dataclass
class Op:
    """One structural request and its answer."""

    id: int
    kind: str
    catalog: str
    schema: str
    table: str | None = None
    new_schema: str | None = None
    new_name: str | None = None
    cascade: bool = False
    replica: str = ""
    start: float = 0.0
    end: float | None = None
    status: int | None = None
    body: dict[str, Any] | None = None
    error: str | None = None

    @property
    def outcome(self) -> str:
        if self.end is None or self.status is None:
            return "uncertain"
        body = self.body or {}
        if 200 <= self.status < 300:
            if self.kind.startswith("drop") and body.get("dropped") is False:
                return "noop"
            return "ok"
        if self.status < 500 or body.get("type") in DEFINITE_FAILURE_TYPES:
            return "failed"
        return "uncertain"

    @property
    def target(self) -> tuple[str, str | None]:
        """(schema, table) this operation leaves behind when it succeeds (creates and renames)."""
        if self.kind == "rename_table":
            return (self.new_schema or self.schema, self.new_name or self.table)
        return (self.schema, self.table)

    def describe(self) -> str:
        what = f"{self.catalog}.{self.schema}" + (f".{self.table}" if self.table else "")
        if self.kind == "rename_table":
            what += f" -> {self.catalog}.{self.new_schema or self.schema}.{self.new_name}"
        if self.cascade:
            what += " cascade"
        answer = self.status if self.status is not None else f"no answer ({self.error})"
        return f"#{self.id} {self.kind} {what} @{self.replica} [{self.start:.3f}-{_fmt(self.end)}] -> {answer}"


def _fmt(t: float | None) -> str:
    return f"{t:.3f}" if t is not None else "?"


class History:
    """A thread-safe recorder of operations."""

    def __init__(self) -> None:
        self.ops: list[Op] = []
        self._lock = threading.Lock()

    def begin(self, kind: str, catalog: str, schema: str, replica: str = "", **args: Any) -> Op:
        if kind not in KINDS:
            raise ValueError(f"unknown operation kind {kind!r}")
        with self._lock:
            op = Op(len(self.ops) + 1, kind, catalog, schema, replica=replica, start=time.monotonic(), **args)
            self.ops.append(op)
        return op

    @staticmethod
    def finish(op: Op, status: int | None, body: dict[str, Any] | None = None, error: str | None = None) -> Op:
        op.status, op.body, op.error = status, body, error
        op.end = time.monotonic()
        return op

    def outcomes(self) -> Counter[str]:
        with self._lock:
            return Counter(op.outcome for op in self.ops if op.end is not None)

    def to_json(self) -> str:
        return json.dumps([asdict(op) for op in self.ops], indent=1)

    @classmethod
    def from_ops(cls, ops: list[Op]) -> History:
        history = cls()
        history.ops = list(ops)
        return history


@dataclass
class CatalogState:
    """One catalog's final state, seen three ways."""

    provider: str
    #: schema -> table names, as listed by the REST API (a listing may repeat a name)
    api: dict[str, list[str]] = field(default_factory=dict)
    api_schema_listing: list[str] = field(default_factory=list)
    #: live rows in the store's tables, read with SQL
    sql: dict[str, list[str]] = field(default_factory=dict)
    sql_schema_rows: list[str] = field(default_factory=list)
    #: table rows whose schema row is missing
    sql_orphans: list[str] = field(default_factory=list)
    #: the external engine's view (None: not comparable, see engine_note)
    engine: dict[str, list[str]] | None = None
    engine_note: str = ""


@dataclass
class Violation:
    kind: str  # duplicate | orphan | divergence | lost-write | open-intent (the soak: left open after repair)
    #          | fence-reissue (the failover soak: a fence an engine accepted granted again, tests/chaos/fence_check.py)
    catalog: str
    detail: str


@dataclass
class Report:
    violations: list[Violation]
    notes: list[str]
    outcomes: Counter[str]

    @property
    def ok(self) -> bool:
        return not self.violations

    def counts(self) -> Counter[str]:
        return Counter(v.kind for v in self.violations)

    def render(self, limit: int = 8) -> str:
        lines = ["operations: " + ", ".join(f"{k} {self.outcomes.get(k, 0)}" for k in ("ok", "noop", "failed", "uncertain"))]
        counts = self.counts()
        for kind in ("duplicate", "orphan", "divergence", "lost-write", "open-intent", "fence-reissue"):
            found = [v for v in self.violations if v.kind == kind]
            lines.append(f"  {kind:<13} {counts.get(kind, 0):>4}")
            lines.extend(f"      {v.catalog}: {v.detail}" for v in found[:limit])
            if len(found) > limit:
                lines.append(f"      ... and {len(found) - limit} more")
        lines.extend(f"  note: {n}" for n in self.notes)
        lines.append("RESULT: " + ("no violations" if self.ok else f"{len(self.violations)} VIOLATION(S)"))
        return "\n".join(lines)


def check(history: History | list[Op], state: dict[str, CatalogState], uncertain_may_apply: bool = False) -> Report:
    """Verify the final state and every acknowledged operation against the invariants above."""
    ops = history.ops if isinstance(history, History) else history
    violations: list[Violation] = []
    notes: list[str] = []
    for name, cat in sorted(state.items()):
        violations += _duplicates(name, cat)
        violations += _orphans(name, cat)
        if cat.engine is None:
            notes.append(f"{name}: connector/store comparison skipped ({cat.engine_note or cat.provider})")
        else:
            violations += _divergence(name, cat)
    ours = [op for op in ops if op.catalog in state]
    violations += _double_acknowledged(ours, uncertain_may_apply)
    violations += _lost_writes(ours, state, uncertain_may_apply)
    return Report(violations, notes, Counter(op.outcome for op in ops))


def _dupes(names: list[str]) -> list[str]:
    return sorted(n for n, k in Counter(names).items() if k > 1)


def _duplicates(catalog: str, cat: CatalogState) -> list[Violation]:
    found = [Violation("duplicate", catalog, f"schema {n} listed twice by the API") for n in _dupes(cat.api_schema_listing)]
    found += [Violation("duplicate", catalog, f"schema {n} has two rows in SQL") for n in _dupes(cat.sql_schema_rows)]
    for schema, tables in sorted(cat.api.items()):
        found += [Violation("duplicate", catalog, f"table {schema}.{n} listed twice by the API") for n in _dupes(tables)]
    for schema, tables in sorted(cat.sql.items()):
        found += [Violation("duplicate", catalog, f"table {schema}.{n} has two rows in SQL") for n in _dupes(tables)]
    return found


def _orphans(catalog: str, cat: CatalogState) -> list[Violation]:
    found = [Violation("orphan", catalog, f"table row {t} has no schema row (SQL)") for t in cat.sql_orphans]
    api_schemas, sql_schemas = set(cat.api), set(cat.sql)
    for schema in sorted(sql_schemas - api_schemas):
        found.append(Violation("orphan", catalog, f"schema {schema} has a row in SQL but the API does not list it"))
    for schema in sorted(api_schemas - sql_schemas):
        found.append(Violation("orphan", catalog, f"schema {schema} is listed by the API but has no row in SQL"))
    for schema in sorted(api_schemas & sql_schemas):
        if sorted(set(cat.api[schema])) != sorted(set(cat.sql[schema])):
            found.append(Violation("orphan", catalog, f"schema {schema}: API lists {sorted(set(cat.api[schema]))}, "
                                                      f"SQL has {sorted(set(cat.sql[schema]))}"))
    return found


def _divergence(catalog: str, cat: CatalogState) -> list[Violation]:
    assert cat.engine is not None
    found = []
    store, engine = set(cat.api), set(cat.engine)
    for schema in sorted(store - engine):
        found.append(Violation("divergence", catalog, f"schema {schema} is in the store but not in the engine"))
    for schema in sorted(engine - store):
        tables = cat.engine[schema]
        found.append(Violation("divergence", catalog, f"schema {schema} is in the engine (tables {tables}) but not in the store"))
    for schema in sorted(store & engine):
        only_store = sorted(set(cat.api[schema]) - set(cat.engine[schema]))
        only_engine = sorted(set(cat.engine[schema]) - set(cat.api[schema]))
        found += [Violation("divergence", catalog, f"table {schema}.{t} is in the store but not in the engine") for t in only_store]
        found += [Violation("divergence", catalog, f"table {schema}.{t} is in the engine but not in the store") for t in only_engine]
    return found


def _removes(op: Op, schema: str, table: str | None) -> bool:
    """Whether `op`, having taken effect, removes schema (table None) or table schema.table."""
    if op.kind == "drop_schema":
        return op.schema == schema
    if table is None:
        return False
    if op.kind == "drop_table":
        return (op.schema, op.table) == (schema, table)
    if op.kind == "rename_table":
        return (op.schema, op.table) == (schema, table) and op.target != (schema, table)
    return False


def _produces(op: Op) -> tuple[str, str, str | None] | None:
    """The object (catalog, schema, table-or-None) an acknowledged create or rename brought into being."""
    if op.outcome != "ok":
        return None
    if op.kind == "create_schema":
        return (op.catalog, op.schema, None)
    if op.kind in ("create_table", "rename_table"):
        schema, table = op.target
        return (op.catalog, schema, table)
    return None


def _fits_between(first: Op, r: Op, second: Op) -> bool:
    """Whether some real-time order puts `first`, then `r`, then `second` (each at a point of its interval)."""
    return r.end is not None and r.end > first.start and r.start < (second.end or second.start)


def _may_explain(op: Op, uncertain_may_apply: bool) -> bool:
    return op.outcome == "ok" or (uncertain_may_apply and op.outcome == "uncertain")


def _double_acknowledged(ops: list[Op], uncertain_may_apply: bool = False) -> list[Violation]:
    found = []
    producers: dict[tuple[str, str, str | None], list[Op]] = {}
    for op in ops:
        key = _produces(op)
        if key is not None:
            producers.setdefault(key, []).append(op)
    for (catalog, schema, table), made in sorted(producers.items(), key=lambda kv: str(kv[0])):
        made.sort(key=lambda o: o.start)
        for a, b in zip(made, made[1:], strict=False):
            between = [r for r in ops if _may_explain(r, uncertain_may_apply) and r is not a and r is not b
                       and _removes(r, schema, table)
                       and (_fits_between(a, r, b) or _fits_between(b, r, a))]
            if not between:
                what = f"schema {schema}" if table is None else f"table {schema}.{table}"
                found.append(Violation("duplicate", catalog, f"{what} created twice, both acknowledged, nothing "
                                                             f"removed it in between: {a.describe()} / {b.describe()}"))
    return found


def _lost_writes(ops: list[Op], state: dict[str, CatalogState], uncertain_may_apply: bool = False) -> list[Violation]:
    found = []
    by_catalog: dict[str, list[Op]] = {}
    for op in ops:
        by_catalog.setdefault(op.catalog, []).append(op)
    for catalog, cat_ops in sorted(by_catalog.items()):
        final = state[catalog].api
        for op in cat_ops:
            if op.outcome != "ok" or op.kind not in ("create_schema", "create_table", "rename_table"):
                continue
            schema, table = op.target
            present = schema in final if op.kind == "create_schema" else table in final.get(schema, [])
            if present:
                continue
            table_key = None if op.kind == "create_schema" else table
            explainers = [o for o in cat_ops if o is not op and _removes(o, schema, table_key)
                          and (o.end is None or o.end > op.start)]
            if any(_may_explain(o, uncertain_may_apply) for o in explainers):
                continue
            uncertain = [o for o in explainers if o.outcome == "uncertain"]
            what = f"schema {schema}" if table_key is None else f"table {schema}.{table}"
            detail = f"{what} missing at the end after acknowledged {op.describe()}"
            if uncertain:
                detail += f"; only uncertain ops might explain it: {', '.join('#' + str(o.id) for o in uncertain[:3])}"
            found.append(Violation("lost-write", catalog, detail))
    return found
