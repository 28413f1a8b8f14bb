"""EntityStore: every read and write of the metadata tree, each in one transaction.

Safety that does not depend on any lock layer ("defence in depth"):
- unique (parent, name) keys decide racing creates and renames: the loser gets XAlreadyExists;
- a create locks its parent row FOR SHARE; a drop locks its row FOR UPDATE and then, level by level
  from the root down, locks the rows it is about to delete FOR UPDATE before it reads their children.
  So a child can never be created (or a table's columns replaced) under a row that is being dropped,
  and a cascade never meets a child committed after it listed the children (a foreign-key error);
- updates lock the row FOR UPDATE and bump its version, so concurrent property changes never lose one;
- multi-query reads run in one snapshot transaction.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, TypeVar

from sqlalchemy import Engine, Row, and_, bindparam, delete, exists, select
from sqlalchemy.exc import DataError, DBAPIError, IntegrityError, OperationalError
from sqlalchemy.orm import Session

from gravimeta import errors, failpoints
from gravimeta.entities import Audit, Catalog, Column, Metalake, Schema, Table
from gravimeta.store import attachments, convert, lock_waits
from gravimeta.store import core_statements as cs
from gravimeta.store.commit_check import CommitCheck
from gravimeta.store.database import disabled_for_test, snapshot_session, writing
from gravimeta.store.guard import current_guard, current_scope, joined_transaction
from gravimeta.store.models import (
    CatalogRow,
    ColumnRow,
    JSONText,
    MetalakeRow,
    SchemaRow,
    TableRow,
    decode_json,
)
from gravimeta.store.raw_query import RawQuery

T = TypeVar("T")
Mutation = Callable[[T], T]
#: the dispatcher's in-use check of a request's metalake and catalog: (metalake in use, catalog in use
#: or None when there is no such catalog), run before the store raises its own NoSuchX for the levels below
InUseCheck = Callable[[bool, "bool | None"], object]

# Transient errors worth retrying the whole transaction for: deadlocks and serialization failures. Not a
# lock wait that timed out (MariaDB 1205): its bound is what the caller had (lock_waits.py), so waiting
# again could only repeat it; it answers busy at once.
_RETRYABLE_PG = {"40P01", "40001"}
_RETRYABLE_MYSQL = {1213}
# Unique-key violations: the database decided a create/rename race (foreign-key errors are not these).
_UNIQUE_PG = "23505"
_UNIQUE_MYSQL = {1062, 1586}
_UNIQUE_SQLITE = {1555, 2067}  # SQLITE_CONSTRAINT_PRIMARYKEY, SQLITE_CONSTRAINT_UNIQUE


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _sqlstate(orig: BaseException | None) -> str | None:
    return getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)


def _mysql_code(orig: BaseException | None) -> Any:
    args: tuple[Any, ...] = getattr(orig, "args", ())
    return args[0] if args else None


def _timed_out_statement(exc: OperationalError) -> str:
    """For the server log only (a 503's detail): the database's own words and the statement that ran out of
    time, so that a log tells a row-lock wait (1205, 55P03) from a statement that ran past its time
    (1969, 57014) and names what waited."""
    return f"{exc.orig}; statement: {' '.join(str(exc.statement or '').split())[:300]}"


def _is_retryable(exc: BaseException) -> bool:
    """A deadlock or serialization failure, also when it is the cause/context of a later error
    (lock_waits.caused_by says why the chain matters)."""
    return lock_waits.caused_by(exc, _RETRYABLE_PG, _RETRYABLE_MYSQL)


def is_unique_violation(exc: IntegrityError) -> bool:
    """Whether `exc` is a unique-key violation (not a foreign-key one), on any backend."""
    return _is_unique_violation(exc)


# Constraint violations that are about the relation between rows, not about the value: a retry after the
# other row changed may succeed, so they are not StoreRefused.
_RELATIONAL_PG = {"23505", "23503"}  # unique, foreign key
_RELATIONAL_MYSQL = {1062, 1586, 1451, 1452, 1216, 1217}
_RELATIONAL_SQLITE = {1555, 2067, 787}  # primary key, unique, foreign key


def _refuses_the_value(exc: IntegrityError) -> bool:
    """A NOT NULL, CHECK or trigger refusal (the value cannot be stored), not a unique/foreign key one."""
    orig = exc.orig
    if getattr(orig, "sqlite_errorcode", None) is not None:
        return getattr(orig, "sqlite_errorcode", None) not in _RELATIONAL_SQLITE
    state = _sqlstate(orig)
    if state is not None and state != "23000":
        return state not in _RELATIONAL_PG
    return _mysql_code(orig) not in _RELATIONAL_MYSQL


def _is_unique_violation(exc: IntegrityError) -> bool:
    orig = exc.orig
    if _sqlstate(orig) == _UNIQUE_PG:  # not `is not None`: PyMySQL errors carry a sqlstate too (23000)
        return True
    if getattr(orig, "sqlite_errorcode", None) is not None:
        return getattr(orig, "sqlite_errorcode", None) in _UNIQUE_SQLITE
    return _mysql_code(orig) in _UNIQUE_MYSQL or "UNIQUE constraint failed" in str(orig)


class EntityStore:
    """The relational record of metalakes, catalogs, schemas and tables."""

    def __init__(self, engine: Engine, max_retries: int = 5, on_snapshot: Callable[[], object] | None = None):
        self.engine = engine
        self.max_retries = max_retries
        #: called once per snapshot transaction (the app counts them in a Prometheus metric)
        self.on_snapshot = on_snapshot
        self._open_snapshot: ContextVar[Session | None] = ContextVar(f"gravimeta_snapshot_{id(self)}", default=None)
        #: the write transactions' COMMITs, looked up when their reply is lost (commit_check.py)
        self.commits = CommitCheck(engine)

    # ----------------------------------------------------------------- transactions

    @contextmanager
    def snapshot(self) -> Iterator[Session]:
        """A snapshot transaction. Inside another snapshot block of this store (same thread or task)
        it joins that one instead of opening its own, so a dispatcher can run several reads (the
        in-use check and the load) in one snapshot: one BEGIN/ROLLBACK and one pool checkout."""
        joined = self._open_snapshot.get()
        if joined is not None:
            yield joined
            return
        if self.on_snapshot is not None:
            self.on_snapshot()
        with self._translated(), snapshot_session(self.engine) as session:
            token = self._open_snapshot.set(session)
            try:
                yield session
            finally:
                self._open_snapshot.reset(token)

    def write(self, work: Callable[[Session], T], prelude: Callable[[Session], object] | None = None) -> T:
        """Run `work` in one write transaction behind the current guard; retry on deadlock.

        The transaction is the operation's claim's own when it has one (guard.joining: a PostgreSQL
        advisory claim, whose locks were taken in it before the TreeLock), else a new one. Either way the
        claim is held before this runs, so what the prelude and the work read and decide (which catalog,
        by id; which connector; one transaction or the journal) is read after the claim was granted, in
        the transaction whose commit the claim protects.
        `prelude`: reads without row locks that run in the same transaction BEFORE the guard, so that
        a wait in them (a lock on a table, a slow disk) happens before a lease claim's guard locks its
        claim row: a holder paused there must not keep the stealer of its expired claim waiting. The
        guard then re-checks the claim in this transaction, so a prelude that read after a steal cannot
        commit.
        The COMMIT is checked when its connection fails (commit_check.py): the write then returns its
        result if the transaction committed, StoreUnavailable if it did not, CommitOutcomeUnknown (502,
        with the operation id) if that could not be looked up. Any other failure comes before COMMIT, or
        is a COMMIT the server refused: nothing was changed."""
        joined = joined_transaction()

        def body(session: Session) -> T:
            with writing():
                if prelude is not None:
                    prelude(session)
                guard = current_guard()
                if guard is not None:
                    guard(session)
                    failpoints.hit("guard.after_lock", scope=current_scope())
                result = work(session)
                if guard is not None:
                    failpoints.hit("store.before_commit", scope=current_scope())
                return result

        for attempt in range(self.max_retries + 1):
            try:
                with self._translated():
                    if joined is None:
                        return self.commits.run(body)  # its COMMIT checked when the connection fails there
                    with joined() as session:
                        result = body(session)
                        self.commits.mark_joined(session)  # the claim's commit is checked (commit_check.py)
                    return result
            except DBAPIError as exc:
                if not _is_retryable(exc):
                    raise
                if attempt < self.max_retries:
                    time.sleep(0.01 * 2**attempt)
                    continue
                raise errors.ScopeBusy(  # never the driver's error as it is: that would be a 500
                    f"This change collided with other operations in the metadata database {attempt + 1} times "
                    "(deadlock or serialization failure); nothing was changed, retry later",
                    detail=str(exc.orig)) from exc
        raise AssertionError("unreachable")

    @contextmanager
    def _translated(self) -> Iterator[None]:
        """Driver errors as domain errors. In a write they are definite: they come before COMMIT, or
        from a COMMIT the server answered, so "nothing was changed" is true (a COMMIT whose connection
        failed is settled by commit_check.py and never reaches here as a driver error)."""
        try:
            yield
        except IntegrityError as exc:
            if _refuses_the_value(exc):
                raise errors.StoreRefused(f"The metadata database refused a value of this request: {exc.orig}") from exc
            raise
        except DataError as exc:  # the value itself: too long, NUL, bad encoding, out of range, a data check
            raise errors.StoreRefused(f"The metadata database refused a value of this request: {exc.orig}") from exc
        except OperationalError as exc:
            if _is_retryable(exc):
                raise
            if lock_waits.timed_out(exc):  # a bounded lock wait ran out (lock_waits.py)
                raise errors.ScopeBusy("A row this change needs stayed locked by another operation for longer "
                                       "than this one could wait; nothing was changed, retry later",
                                       detail=_timed_out_statement(exc)) from exc
            raise errors.StoreUnavailable(  # the driver's text names host, port and role: log only
                "The metadata database failed; nothing was changed", detail=str(exc.orig)) from exc
        except DBAPIError as exc:
            if not (exc.connection_invalidated or lock_waits.session_ended(exc)):
                raise
            # e.g. the server ended our session, idle in its transaction too long (database.py): the
            # transaction was rolled back, and the pool replaces the connection
            raise errors.StoreUnavailable("The metadata database ended this transaction; nothing was changed",
                                          detail=str(exc.orig)) from exc

    # ----------------------------------------------------------------- lookups (inside a session)
    # Public for checks that run inside a caller's own store transaction with the same row locks and
    # errors as the store's writes (gravimeta/store/preconditions.py). `lock`: None, "share" (FOR
    # SHARE) or "update" (FOR UPDATE).

    @staticmethod
    def _metalake_row(s: Session, name: str, lock: str | None = None) -> MetalakeRow:
        row = s.scalar(_locked(select(MetalakeRow).where(MetalakeRow.name == name), lock))
        if row is None:
            raise errors.NoSuchMetalake(f"Metalake {name} does not exist")
        return row

    # The parent chain is resolved inside the same statement (nested scalar subqueries on the unique
    # (parent, name) keys), not one query per level: 1 statement, except a locked read on MariaDB/MySQL
    # takes 2 (the parent id, then the row lock on the leaf alone: InnoDB would also lock the parents'
    # rows that a subquery reads; PostgreSQL locks only the rows of the outer FROM, SQLite has no row
    # locks). Only a miss walks the chain again, to name the level that is missing.

    def catalog_row(self, s: Session, m: str, c: str, lock: str | None = None) -> CatalogRow:
        row = _child_row(s, cs.CATALOG_ROWS, {"m": m}, c, lock)
        if row is None:
            self._metalake_row(s, m)
            raise errors.NoSuchCatalog(f"Catalog {m}.{c} does not exist")
        return row

    def schema_row(self, s: Session, m: str, c: str, sc: str, lock: str | None = None) -> SchemaRow:
        row = _child_row(s, cs.SCHEMA_ROWS, {"m": m, "c": c}, sc, lock)
        if row is None:
            self.catalog_row(s, m, c)
            raise errors.NoSuchSchema(f"Schema {m}.{c}.{sc} does not exist")
        return row

    def table_row(self, s: Session, m: str, c: str, sc: str, t: str, lock: str | None = None) -> TableRow:
        row = _child_row(s, cs.TABLE_ROWS, {"m": m, "c": c, "s": sc}, t, lock)
        if row is None:
            self.schema_row(s, m, c, sc)
            raise errors.NoSuchTable(f"Table {m}.{c}.{sc}.{t} does not exist")
        return row

    # The same lookups FOR SHARE as Core rows, for the structural writes that only need the parent's
    # id: the same statements (and the same walk on a miss), without ORM objects.

    def _shared_catalog(self, s: Session, m: str, c: str) -> Row[Any]:
        row = cs.locked_row(s.connection(), cs.CATALOG_CORE, {"m": m}, c, "share")
        if row is None:
            self._metalake_row(s, m)
            raise errors.NoSuchCatalog(f"Catalog {m}.{c} does not exist")
        return row

    def _table_for_update(self, s: Session, m: str, c: str, sc: str, t: str) -> Row[Any]:
        row = cs.locked_row(s.connection(), cs.TABLE_CORE, {"m": m, "c": c, "s": sc}, t, "update")
        if row is None:
            self.schema_row(s, m, c, sc)
            raise errors.NoSuchTable(f"Table {m}.{c}.{sc}.{t} does not exist")
        return row

    def _shared_schema(self, s: Session, m: str, c: str, sc: str) -> Row[Any]:
        row = cs.locked_row(s.connection(), cs.SCHEMA_CORE, {"m": m, "c": c}, sc, "share")
        if row is None:
            self.catalog_row(s, m, c)
            raise errors.NoSuchSchema(f"Schema {m}.{c}.{sc} does not exist")
        return row

    @staticmethod
    def columns_of(s: Session, table_id: int) -> list[Column]:
        """The table's columns, in order."""
        return [convert.column_of(row) for row in s.connection().execute(cs.COLUMNS_OF, {"table_id": table_id})]

    # ----------------------------------------------------------------- metalakes

    def list_metalakes(self) -> list[Metalake]:
        with self.snapshot() as s:
            return [convert.metalake_of(r) for r in s.scalars(select(MetalakeRow).order_by(MetalakeRow.name))]

    def get_metalake(self, name: str) -> Metalake:
        with self.snapshot() as s:
            return convert.metalake_of(self._metalake_row(s, name))

    def create_metalake(self, metalake: Metalake, user: str) -> Metalake:
        def work(s: Session) -> Metalake:
            row = MetalakeRow(
                name=metalake.name, comment=metalake.comment, properties=metalake.properties,
                in_use=True, version=1,
            )
            convert.set_audit(row, Audit(user, now_iso()))
            s.add(row)
            _flush_unique(s, errors.MetalakeAlreadyExists(f"Metalake {metalake.name} already exists"))
            return convert.metalake_of(row)

        return self.write(work)

    def update_metalake(self, name: str, mutate: Mutation[Metalake], user: str) -> tuple[Metalake, Metalake]:
        def work(s: Session) -> tuple[Metalake, Metalake]:
            row = self._metalake_row(s, name, lock="update")
            before = convert.metalake_of(row)
            after = mutate(copy.deepcopy(before))
            row.name, row.comment, row.properties, row.in_use = (
                after.name, after.comment, after.properties, after.in_use,
            )
            _touch(row, user)
            _flush_unique(s, errors.MetalakeAlreadyExists(f"Metalake {after.name} already exists"))
            return before, convert.metalake_of(row)

        return self.write(work)

    def drop_metalake(self, name: str, cascade: bool, precheck: Callable[[Metalake], None] | None = None) -> bool:
        """Delete a metalake (and with cascade, everything under it). False if it does not exist."""

        def work(s: Session) -> bool:
            row = s.scalar(select(MetalakeRow).where(MetalakeRow.name == name).with_for_update())
            if row is None:
                return False
            if precheck:
                precheck(convert.metalake_of(row))
            catalogs = select(CatalogRow.id).where(CatalogRow.metalake_id == row.id)
            if not cascade and s.scalar(select(exists(catalogs))):
                raise errors.NonEmptyMetalake(f"Metalake {name} has catalogs; drop them first or use force")
            _delete_catalogs(s, catalogs)
            attachments.metalake_dropped(s, row.id)
            s.execute(delete(MetalakeRow).where(MetalakeRow.id == row.id))
            return True

        return self.write(work)

    # ----------------------------------------------------------------- catalogs

    def list_catalogs(self, m: str) -> list[Catalog]:
        with self.snapshot() as s:
            metalake = self._metalake_row(s, m)
            rows = s.scalars(select(CatalogRow).where(CatalogRow.metalake_id == metalake.id).order_by(CatalogRow.name))
            return [convert.catalog_of(r, m) for r in rows]

    def get_catalog(self, m: str, c: str) -> Catalog:
        with self.snapshot() as s:
            return convert.catalog_of(self.catalog_row(s, m, c), m)

    def get_metalake_and_catalog(self, m: str, c: str) -> tuple[Metalake, Catalog | None]:
        """The metalake and its catalog `c` (None if there is none) in one query: the in-use check of
        every schema/table request."""
        with self.snapshot() as s:
            return self.metalake_and_catalog_in(s, m, c)

    @staticmethod
    def metalake_and_catalog_in(s: Session, m: str, c: str) -> tuple[Metalake, Catalog | None]:
        """get_metalake_and_catalog inside the caller's transaction (a structural operation checks
        in-use in the same transaction that records its intent)."""
        found = s.connection().execute(cs.METALAKE_AND_CATALOG, {"m": m, "c": c}).first()
        if found is None:
            raise errors.NoSuchMetalake(f"Metalake {m} does not exist")
        split = len(cs.METALAKE_FIELDS)
        metalake = convert.metalake_of(SimpleNamespace(**dict(zip(cs.METALAKE_FIELDS, found[:split], strict=True))))
        if found[split] is None:  # the catalog's id: no such catalog
            return metalake, None
        return metalake, convert.catalog_of(SimpleNamespace(**dict(zip(cs.CATALOG_FIELDS, found[split:], strict=True))), m)

    def create_catalog(self, catalog: Catalog, user: str, precheck: Callable[[Metalake], None] | None = None,
                       also: Callable[[Session, Catalog], None] | None = None) -> Catalog:
        """`also(session, created)`: more of the same transaction (the record of the catalog's engine
        identity, dispatch/retirement.py)."""

        def work(s: Session) -> Catalog:
            metalake = self._metalake_row(s, catalog.metalake, lock="share")
            if precheck:
                precheck(convert.metalake_of(metalake))
            row = CatalogRow(
                metalake_id=metalake.id, name=catalog.name, type=catalog.type, provider=catalog.provider,
                comment=catalog.comment, properties=catalog.properties, in_use=True, version=1,
            )
            created = now_iso()  # Gravitino's CatalogManager fills lastModifier/Time on create too
            convert.set_audit(row, Audit(user, created, user, created))
            s.add(row)
            _flush_unique(s, errors.CatalogAlreadyExists(f"Catalog {catalog.metalake}.{catalog.name} already exists"))
            made = convert.catalog_of(row, catalog.metalake)
            if also is not None:
                also(s, made)
            return made

        return self.write(work)

    def update_catalog(self, m: str, c: str, mutate: Mutation[Catalog], user: str,
                       also: Callable[[Session, Catalog], None] | None = None) -> tuple[Catalog, Catalog]:
        """`also(session, after)`: more of the same transaction, which holds the catalog's row (the record
        of its engine identity for the properties it now has, dispatch/retirement.py)."""

        def work(s: Session) -> tuple[Catalog, Catalog]:
            row = self.catalog_row(s, m, c, lock="update")
            before = convert.catalog_of(row, m)
            after = mutate(copy.deepcopy(before))
            row.name, row.comment, row.properties, row.in_use = (
                after.name, after.comment, after.properties, after.in_use,
            )
            _touch(row, user)
            _flush_unique(s, errors.CatalogAlreadyExists(f"Catalog {m}.{after.name} already exists"))
            updated = convert.catalog_of(row, m)
            if also is not None:
                also(s, updated)
            return before, updated

        return self.write(work)

    def drop_catalog(
        self, m: str, c: str, cascade: bool, precheck: Callable[[Catalog], None] | None = None,
        metalake_precheck: Callable[[Metalake], None] | None = None,
    ) -> bool:
        """`metalake_precheck` runs once the catalog is found, before `precheck` (Gravitino checks the
        catalog's existence, then its metalake's in-use state, then the catalog's)."""

        def work(s: Session) -> bool:
            metalake = s.scalar(select(MetalakeRow).where(MetalakeRow.name == m))
            if metalake is None:
                return False
            q = select(CatalogRow).where(CatalogRow.metalake_id == metalake.id, CatalogRow.name == c)
            row = s.scalar(q.with_for_update())
            if row is None:
                return False
            if metalake_precheck:
                metalake_precheck(convert.metalake_of(metalake))
            if precheck:
                precheck(convert.catalog_of(row, m))
            schemas = select(SchemaRow.id).where(SchemaRow.catalog_id == row.id)
            if not cascade and s.scalar(select(exists(schemas))):
                raise errors.NonEmptyCatalog(f"Catalog {m}.{c} has schemas; drop them first or use force")
            _delete_catalogs(s, select(CatalogRow.id).where(CatalogRow.id == row.id))
            return True

        return self.write(work)

    # ----------------------------------------------------------------- schemas

    def list_schemas(self, m: str, c: str) -> list[Schema]:
        with self.snapshot() as s:
            catalog = self.catalog_row(s, m, c)
            rows = s.scalars(select(SchemaRow).where(SchemaRow.catalog_id == catalog.id).order_by(SchemaRow.name))
            return [convert.schema_of(r) for r in rows]

    def get_schema(self, m: str, c: str, sc: str) -> Schema:
        with self.snapshot() as s:
            return convert.schema_of(self.schema_row(s, m, c, sc))

    def create_schema(self, m: str, c: str, schema: Schema, user: str) -> Schema:
        return self.write(lambda s: self.create_schema_in(s, m, c, schema, user))

    def create_schema_in(self, s: Session, m: str, c: str, schema: Schema, user: str | None) -> Schema:
        """create_schema inside the caller's write transaction (`user` None: no creator, an import)."""
        catalog = self._shared_catalog(s, m, c)
        values = {"catalog_id": catalog.id, "name": schema.name, "comment": schema.comment,
                  "properties": schema.properties, "version": 1, **_audit_values(Audit(user, now_iso()))}
        with _unique(errors.SchemaAlreadyExists(f"Schema {m}.{c}.{schema.name} already exists")):
            cs.insert_row(s.connection(), cs.SCHEMA, values)
        return convert.schema_of(SimpleNamespace(**values))

    def update_schema(self, m: str, c: str, sc: str, mutate: Mutation[Schema], user: str) -> tuple[Schema, Schema]:
        def work(s: Session) -> tuple[Schema, Schema]:
            row = self.schema_row(s, m, c, sc, lock="update")
            before = convert.schema_of(row)
            after = mutate(copy.deepcopy(before))
            row.comment, row.properties = after.comment, after.properties
            _touch(row, user)
            s.flush()
            return before, convert.schema_of(row)

        return self.write(work)

    def schema_to_drop(self, s: Session, m: str, c: str, sc: str, cascade: bool) -> SchemaRow | None:
        """The schema row a drop would delete, locked FOR UPDATE; None when it (or its catalog) does
        not exist; NonEmptySchema when it has tables and `cascade` is off."""
        try:
            catalog = self.catalog_row(s, m, c)
        except errors.NotFound:
            return None
        q = select(SchemaRow).where(SchemaRow.catalog_id == catalog.id, SchemaRow.name == sc)
        row = s.scalar(q.with_for_update())
        if row is None:
            return None
        tables = select(TableRow.id).where(TableRow.schema_id == row.id)
        if not cascade and s.scalar(select(exists(tables))):
            raise errors.NonEmptySchema(f"Schema {m}.{c}.{sc} is not empty; use cascade=true to drop its tables")
        return row

    def drop_schema(self, m: str, c: str, sc: str, cascade: bool) -> bool:
        return self.write(lambda s: self.drop_schema_in(s, m, c, sc, cascade))

    def drop_schema_in(self, s: Session, m: str, c: str, sc: str, cascade: bool) -> bool:
        """drop_schema inside the caller's write transaction."""
        row = self.schema_to_drop(s, m, c, sc, cascade)
        if row is None:
            return False
        _delete_schemas(s, select(SchemaRow.id).where(SchemaRow.id == row.id))
        return True

    # ----------------------------------------------------------------- tables

    def list_tables(self, m: str, c: str, sc: str) -> list[str]:
        with self.snapshot() as s:
            schema = self.schema_row(s, m, c, sc)
            return list(s.scalars(select(TableRow.name).where(TableRow.schema_id == schema.id).order_by(TableRow.name)))

    def get_table(self, m: str, c: str, sc: str, t: str) -> Table:
        """The table: its row (parent chain resolved in the same statement), then its columns, in one
        snapshot."""
        with self.snapshot() as s:
            row = self.table_row(s, m, c, sc, t)
            return convert.table_of(row, self.columns_of(s, row.id))

    def load_table(self, m: str, c: str, sc: str, t: str, in_use: InUseCheck) -> Table:
        """The table for a load request, in ONE statement outside any transaction: the metalake's and
        catalog's in-use flags, the schema id, the table row and its columns (one row per column, outer
        joined). One statement reads one consistent state, so the load cannot see half of a rename or a
        drop without a snapshot transaction (a round trip on PostgreSQL, docs/benchmarks.md). `in_use`
        (the dispatcher's check) runs first: errors come in the order NoSuchMetalake, MetalakeNotInUse,
        NoSuchCatalog, CatalogNotInUse, NoSuchSchema, NoSuchTable."""
        with self._translated():
            rows = _LOAD_TABLE.rows(self.engine, {"m": m, "c": c, "s": sc, "t": t})
        if not rows:
            raise errors.NoSuchMetalake(f"Metalake {m} does not exist")
        first = dict(zip(_LOAD_TABLE_FIELDS, rows[0], strict=True))
        in_use(bool(first["metalake_in_use"]),
               None if first["catalog_in_use"] is None else bool(first["catalog_in_use"]))
        if first["catalog_in_use"] is None:
            raise errors.NoSuchCatalog(f"Catalog {m}.{c} does not exist")
        if first["found_schema_id"] is None:
            raise errors.NoSuchSchema(f"Schema {m}.{c}.{sc} does not exist")
        if first["id"] is None:
            raise errors.NoSuchTable(f"Table {m}.{c}.{sc}.{t} does not exist")
        for name in _JSON_FIELDS:
            first[name] = decode_json(first[name])
        return convert.table_of(SimpleNamespace(**first), [
            convert.raw_column_of(row[_FIRST_COLUMN_FIELD:]) for row in rows if row[_FIRST_COLUMN_FIELD] is not None
        ])

    def create_table(self, m: str, c: str, sc: str, table: Table, user: str) -> Table:
        return self.write(lambda s: self.create_table_in(s, m, c, sc, table, user))

    def create_table_in(self, s: Session, m: str, c: str, sc: str, table: Table, user: str | None) -> Table:
        """create_table inside the caller's write transaction (`user` None: no creator, an import)."""
        schema = self._shared_schema(s, m, c, sc)
        values = {
            "schema_id": schema.id, "name": table.name, "comment": table.comment, "properties": table.properties,
            "partitioning": table.partitioning, "distribution": table.distribution,
            "sort_orders": table.sort_orders, "indexes": table.indexes, "version": 1,
            **_audit_values(Audit(user, now_iso())),
        }
        conn = s.connection()
        with _unique(errors.TableAlreadyExists(f"Table {m}.{c}.{sc}.{table.name} already exists")):
            table_id = cs.insert_row(conn, cs.TABLE, values)
        return convert.table_of(SimpleNamespace(**values), cs.insert_columns(conn, table_id, table.columns))

    def update_table(
        self, m: str, c: str, sc: str, t: str, mutate: Mutation[Table], user: str, new_schema: str | None = None
    ) -> tuple[Table, Table]:
        """Apply `mutate` to the locked table row; `new_schema` moves it to a sibling schema."""
        return self.write(lambda s: self.update_table_in(s, m, c, sc, t, mutate, user, new_schema))

    def update_table_in(
        self, s: Session, m: str, c: str, sc: str, t: str, mutate: Mutation[Table], user: str,
        new_schema: str | None = None,
    ) -> tuple[Table, Table]:
        """update_table inside the caller's write transaction. The row is read and updated with Core
        (cs.update_changed: the UPDATE the ORM's flush sent, only the columns whose value changed)."""
        row = self._table_for_update(s, m, c, sc, t)
        before = convert.table_of(row, self.columns_of(s, row.id))
        after = mutate(before.working_copy())  # the mutation never touches `before` (tests/unit/test_table_working_copy.py)
        current = row._asdict()
        values = {
            "name": after.name, "comment": after.comment, "properties": after.properties,
            "partitioning": after.partitioning, "distribution": after.distribution,
            "sort_orders": after.sort_orders, "indexes": after.indexes,
            "last_modifier": user, "last_modified_time": now_iso(), "version": row.version + 1,
        }
        if new_schema is not None and new_schema != sc:
            values["schema_id"] = self._shared_schema(s, m, c, new_schema).id
        target = f"{m}.{c}.{new_schema or sc}.{after.name}"
        with _unique(errors.TableAlreadyExists(f"Table {target} already exists")):
            cs.update_changed(s.connection(), cs.TABLE, current, values)
        updated = SimpleNamespace(**{**current, **values})
        columns = after.columns  # equal to the stored ones unless rewritten below
        if after.columns != before.columns:
            kept = {c.id for c in after.columns}  # rewritten with their ids: renamed or moved columns keep them
            attachments.columns_dropped(s, [c.id for c in before.columns if c.id not in kept and c.id is not None])
            s.execute(delete(ColumnRow).where(ColumnRow.table_id == row.id))
            s.flush()
            columns = _write_columns(s, row.id, after.columns)
        return before, convert.table_of(updated, columns)

    def table_to_drop(self, s: Session, m: str, c: str, sc: str, t: str) -> Row[Any] | None:
        """The table row a drop would delete (a Core row), locked FOR UPDATE under its schema (FOR
        SHARE); None when it or a parent does not exist."""
        try:
            schema = self._shared_schema(s, m, c, sc)
        except errors.NotFound:
            return None
        return s.connection().execute(cs.TABLE_FOR_UPDATE, {"schema_id": schema.id, "name": t}).first()

    def drop_table(self, m: str, c: str, sc: str, t: str) -> bool:
        return self.write(lambda s: self.drop_table_in(s, m, c, sc, t))

    def drop_table_in(self, s: Session, m: str, c: str, sc: str, t: str) -> bool:
        """drop_table inside the caller's write transaction."""
        row = self.table_to_drop(s, m, c, sc, t)
        if row is None:
            return False
        _delete_table_ids(s, [row.id])  # table_to_drop locked the row already
        return True


# --------------------------------------------------------------------- helpers

# Statements of the hottest reads, built once with bound parameters: building the expression tree on
# every request cost more CPU than executing it (profile of load table, docs/benchmarks.md).
# The load-table statement (EntityStore.load_table), run on the raw DBAPI cursor: the parents' in-use
# flags, the schema id, the table row, then one row per column (outer joined, in position order).
_LOAD_TABLE_COLUMNS = (
    MetalakeRow.in_use.label("metalake_in_use"), CatalogRow.in_use.label("catalog_in_use"),
    SchemaRow.id.label("found_schema_id"), *TableRow.__table__.c,
    *(ColumnRow.__table__.c[name].label(f"col_{name}") for name in convert.RAW_COLUMN_FIELDS),
)
_LOAD_TABLE_FIELDS = [col.key for col in _LOAD_TABLE_COLUMNS]
assert len(set(_LOAD_TABLE_FIELDS)) == len(_LOAD_TABLE_FIELDS), "the load-table fields need distinct names"
_FIRST_COLUMN_FIELD = _LOAD_TABLE_FIELDS.index(f"col_{convert.RAW_COLUMN_FIELDS[0]}")
_JSON_FIELDS = [col.key for col in TableRow.__table__.c if isinstance(col.type, JSONText)]
_LOAD_TABLE = RawQuery(
    select(*_LOAD_TABLE_COLUMNS)
    .select_from(MetalakeRow)
    .outerjoin(CatalogRow, and_(CatalogRow.metalake_id == MetalakeRow.id, CatalogRow.name == bindparam("c")))
    .outerjoin(SchemaRow, and_(SchemaRow.catalog_id == CatalogRow.id, SchemaRow.name == bindparam("s")))
    .outerjoin(TableRow, and_(TableRow.schema_id == SchemaRow.id, TableRow.name == bindparam("t")))
    .outerjoin(ColumnRow, ColumnRow.table_id == TableRow.id)
    .where(MetalakeRow.name == bindparam("m"))
    .order_by(ColumnRow.position)
)


def _child_row(s: Session, level: cs.Level, chain: dict[str, str], name: str, lock: str | None) -> Any:
    """The ORM row `name` under the parent that `chain` names (m, c, s: the statement's parent chain),
    or None."""
    if lock is not None and s.get_bind().dialect.name in ("mysql", "mariadb"):
        parent_id = s.scalar(level.parent_id, chain)
        if parent_id is None:
            return None
        return s.scalar(level.by_parent_id(lock), {"parent_id": parent_id, "name": name})
    return s.scalar(level.statement(lock), {**chain, "name": name})


def _audit_values(audit: Audit) -> dict[str, str | None]:
    """A new row's audit columns (convert.set_audit, for a row inserted with Core)."""
    return {"creator": audit.creator, "create_time": audit.create_time,
            "last_modifier": audit.last_modifier, "last_modified_time": audit.last_modified_time}


def _write_columns(s: Session, table_id: int, columns: list[Column]) -> list[Column]:
    """Insert the table's columns; returns them as written (no read back). Columns that keep their id
    go first: SQLite gives a new row the highest rowid + 1, which must not be one of theirs."""
    rows = convert.column_rows(table_id, columns)
    for batch in ([r for r in rows if r.id is not None], [r for r in rows if r.id is None]):
        s.add_all(batch)
        s.flush()
    return [convert.column_of(row) for row in rows]


def _locked(query: Any, lock: str | None) -> Any:
    if lock == "update" and disabled_for_test("no_row_lock"):  # TEST-ONLY: updates read without FOR UPDATE
        return query
    if lock == "update":
        return query.with_for_update()
    if lock == "share":
        return query.with_for_update(read=True)
    return query


@contextmanager
def _unique(conflict: errors.AlreadyExists) -> Iterator[None]:
    """A unique-key violation in the block becomes the given AlreadyExists (the database decided the race)."""
    try:
        yield
    except IntegrityError as exc:
        if _is_unique_violation(exc):
            raise conflict from exc
        raise


def _touch(row: MetalakeRow | CatalogRow | SchemaRow | TableRow, user: str) -> None:
    row.last_modifier, row.last_modified_time = user, now_iso()
    row.version = row.version + 1


def _flush_unique(s: Session, conflict: errors.AlreadyExists) -> None:
    """Flush; a unique-key violation becomes the given AlreadyExists (_unique).

    No savepoint: the caller's transaction is abandoned anyway when the conflict is raised, and on
    MySQL a deadlock inside a savepoint surfaced as 'SAVEPOINT does not exist' and was not retried."""
    with _unique(conflict):
        s.flush()


# The cascade helpers take a SELECT of ids, lock those rows FOR UPDATE (waiting out any transaction
# that holds them: a create under them holds FOR SHARE, a column change holds FOR UPDATE) and only then
# read and delete their children, so the deletes see every child committed before the lock.


def _delete_tables(s: Session, table_ids: Any) -> None:
    _delete_table_ids(s, list(s.scalars(table_ids.with_for_update())))


def _delete_table_ids(s: Session, ids: list[int]) -> None:
    """Delete these tables, already locked FOR UPDATE, and their columns."""
    if ids:
        attachments.tables_dropped(s, ids)
        conn = s.connection()  # Core DELETEs: no ORM objects of these rows to synchronise
        conn.execute(cs.DELETE_COLUMNS_OF_TABLES, {"ids": ids})
        conn.execute(cs.DELETE_TABLES, {"ids": ids})


def _delete_schemas(s: Session, schema_ids: Any) -> None:
    ids = list(s.scalars(schema_ids.with_for_update()))
    if ids:
        _delete_tables(s, select(TableRow.id).where(TableRow.schema_id.in_(ids)))
        attachments.schemas_dropped(s, ids)
        s.execute(delete(SchemaRow).where(SchemaRow.id.in_(ids)))


def _delete_catalogs(s: Session, catalog_ids: Any) -> None:
    ids = list(s.scalars(catalog_ids.with_for_update()))
    if ids:
        _delete_schemas(s, select(SchemaRow.id).where(SchemaRow.catalog_id.in_(ids)))
        attachments.catalogs_dropped(s, ids)
        s.execute(delete(CatalogRow).where(CatalogRow.id.in_(ids)))
