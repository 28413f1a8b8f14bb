"""The `sqlite` provider's connector: schemas and tables of one catalog file (see the package docstring).

Every mutating call is one BEGIN IMMEDIATE transaction that first checks the call's fence against the
catalog file's fence table (fences.py), so a call of a holder that lost its claim changes nothing once
a newer holder has made the file see its fence. Only prepare_engine (catalog creation) and
create_schema may create the catalog file; every other call, observations included, answers
ConnectionFailed when the file is missing (a wrong catalog root must never look like an empty catalog).

Schema files are per incarnation (registry.py): a create makes a new file, a drop turns the file into
a tombstone in its fenced transaction and deletes it afterwards, and a table call attached to a schema's
file checks, inside its transaction, that the registry still names that file.

Text the files hold is engine data, untrusted like a metastore's reply: another program may have written
names that are not UTF-8, or that hold text no metadata store can hold (NUL; capacity.py). Every
connection decodes text with engine_text, so such a value is a 502 naming the catalog file and the value
(escaped), never a 500 from sqlite3's decoder. A mutating call that fails so (or on any other engine
error) before its fenced transaction commits says that nothing was changed (an EngineUnreachable, see
_connect), so the journal withdraws its intent and no pending operation blocks the catalog.
"""

from __future__ import annotations

import os
import re
import sqlite3
import traceback
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import cast

from connectors.base import NO_FENCE, CatalogContext, Connector, Fence
from connectors.properties import CatalogProperties, PropertyEntry, java_int
from connectors.sqlite import fences, identity, registry
from connectors.sqlite.alter import in_place_plan, infer_renames, integrity, rebuild
from connectors.sqlite.ddl import check_table, desired_shape, quote, real_shape, same_by_affinity, table_ddl
from connectors.sqlite.describe import describe_table, described_type
from connectors.sqlite.paths import ROOT_ENV, check_single_link, location_guard, resolve_catalog_path
from gravimeta import capacity, errors, failpoints
from gravimeta.entities import Schema, Table

APPLICATION_ID = 0x47524D53  # "GRMS": marks a schema file written by gravimeta
#: how often a table call attaches its schemas again when one was re-created between attach and transaction
ATTACH_ATTEMPTS = 3


def _catalog_file(raw: str) -> Path:
    """The `path` property's check: inside the root, and not a file with a second hard link."""
    path = resolve_catalog_path(raw)
    check_single_link(path, errors.IllegalArgument, f"Catalog property 'path' {raw!r} names a file that")
    return path


def _busy_timeout(value: str) -> int:
    timeout = cast(int, java_int(value))
    if not 0 <= timeout <= 600_000:
        raise ValueError("busy-timeout-ms must be an integer from 0 to 600000")
    return timeout


class SQLiteCatalogConnector(Connector):
    catalog_properties = CatalogProperties((
        # immutable: moving a catalog to another file would orphan its schemas and tables
        PropertyEntry("path", "catalog file, relative to the sqlite catalog root", required=True, immutable=True,
                      decode=_catalog_file),
        PropertyEntry("busy-timeout-ms", "how long to wait for another writer (default 5000)", decode=_busy_timeout),
    ))
    supports_purge = True
    checks_fences = True

    def __init__(self, context: CatalogContext):
        super().__init__(context)
        self.validate_properties(context.properties)

    @classmethod
    @contextmanager
    def location_guard(cls, properties: dict[str, str],
                       in_use: Callable[[], Iterable[tuple[str, dict[str, str]]]]) -> Iterator[None]:
        """No two catalogs (in any metalake) may own the same files (paths.location_guard)."""
        with location_guard(properties["path"], lambda: [(label, p["path"]) for label, p in in_use() if p.get("path")]):
            yield

    # ---------------------------------------------------------------- plumbing

    @property
    def path(self) -> Path:
        """Resolved on every use, so a symlink planted after creation cannot lead outside the root."""
        return resolve_catalog_path(self.context.properties["path"])

    def engine_locations(self) -> frozenset[str]:
        """The catalog file, resolved (symlinks, `.`, repeated slashes, the root's own spelling), and its
        identity once known."""
        return frozenset({f"sqlite:{self.path}"}) | self.identity_locations()

    def engine_identity(self, deadline: float | None = None) -> str | None:
        """The id kept in the catalog file (identity.py); made now in a file made before identities."""
        if self._known_identity:
            return self._known_identity
        if failpoints.disabled_for_test("engine_identity"):  # TEST-ONLY: none
            return None
        with self._connect(Fence(deadline=deadline)) as conn:
            return self.remember_identity(identity.read_or_make(conn))

    def _schema_dir(self) -> Path:
        return self.path.with_name(self.path.name + ".schemas")

    def _schema_path(self, file_name: str) -> Path:
        schema_dir = self._schema_dir()
        target = (schema_dir / file_name).resolve()
        if target.parent != schema_dir.resolve():  # the registry is engine data: its fault, not the request's
            raise errors.ConnectionFailed(f"SQLite catalog file {self._label} names schema file {file_name!r}, which "
                                          "resolves outside the catalog's directory", detail=str(target))
        check_single_link(target, errors.ConnectionFailed, f"Schema file {file_name} of SQLite catalog {self._label}")
        return target

    @property
    def _label(self) -> str:
        """How messages name the catalog file: by its `path` property, never by an absolute path."""
        return repr(self.context.properties["path"])

    @contextmanager
    def _connect(self, fence: Fence = NO_FENCE, create: bool = False, writes: bool = False) -> Iterator[_Connection]:
        """A connection to the catalog file (busy timeout bounded by the fence's deadline). `create`:
        the file and its directories may be created; otherwise a missing file is ConnectionFailed.
        `writes` (a mutating call): a ConnectionFailed raised before the call's fenced transaction
        committed becomes an EngineUnreachable saying nothing was changed. That is provable here: every
        change a call makes is inside that one SQLite transaction, and a transaction that does not reach
        its COMMIT is rolled back (by the rollback below, or by SQLite when the connection closes). So the
        journal withdraws the call's intent instead of leaving it pending for a repair that would meet the
        same unreadable file every time (an unreadable name, a registry row naming a file outside the
        catalog's directory, a schema file that is gone)."""
        path = self.path
        check_single_link(path, errors.ConnectionFailed, f"SQLite catalog file {self._label}")
        timeout = self._busy_timeout(fence)
        if not create and not path.exists():
            raise errors.EngineUnreachable(
                f"SQLite catalog file {self._label} does not exist: the engine of catalog {self.context.catalog} is "
                f"unreachable from here (is the catalog root right? {ROOT_ENV} or GRAVIMETA_HOME)", detail=str(path)
            )
        try:
            if create:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._schema_dir().mkdir(exist_ok=True)
            conn = sqlite3.connect(_uri(path, create), isolation_level=None, timeout=timeout, uri=True,
                                   factory=_Connection)
            conn.text_factory = engine_text
        except (OSError, sqlite3.Error) as exc:
            raise errors.ConnectionFailed(f"Cannot open SQLite catalog file {self._label}", detail=f"{path}: {exc}") from exc
        try:
            with _unreadable_as_502(self._label), _translated(self._label, path):
                for statement in (*registry.CREATE, fences.CREATE, identity.CREATE):
                    conn.execute(statement)
                yield conn
        except errors.ConnectionFailed as exc:
            if not writes or conn.committed or isinstance(exc, errors.EngineUnreachable):
                raise
            raise errors.EngineUnreachable(f"{exc.message.rstrip('.')}; nothing was changed", detail=exc.detail) from exc
        finally:
            if conn.in_transaction:
                conn.rollback()
            conn.close()

    def _busy_timeout(self, fence: Fence) -> float:
        """How long a connection of this call may wait for another writer: bounded by the fence's deadline."""
        return fence.timeout(int(self.context.properties.get("busy-timeout-ms", "5000")) / 1000)

    def _no_such_schema(self, schema: str) -> errors.NoSuchSchema:
        return errors.NoSuchSchema(f"Schema {schema} does not exist in SQLite catalog {self.context.catalog}")

    def _attach(self, conn: sqlite3.Connection, alias: str, schema: str) -> str:
        """Attach the file the registry names for `schema` as `alias`; its name."""
        file_name = registry.file_of(conn, schema)
        if file_name is None:
            raise self._no_such_schema(schema)
        conn.execute(f"ATTACH DATABASE ? AS {alias}", (_uri(self._schema_path(file_name), create=False),))
        return file_name

    def _tables_in(self, file_name: str, fence: Fence) -> list[str]:
        """The user tables of a schema file, read on a connection of its own (a transaction cannot
        ATTACH). Inside a mutating call's transaction nobody else can write the file: every writer holds
        the catalog file's write lock first."""
        path = self._schema_path(file_name)
        with _translated(self._label, path):
            conn = sqlite3.connect(_uri(path, create=False), uri=True, timeout=self._busy_timeout(fence))
            conn.text_factory = engine_text
            try:
                return self._user_tables(conn, "main")
            finally:
                conn.close()

    @contextmanager
    def _writing(self, conn: sqlite3.Connection, fence: Fence, *schemas: str) -> Iterator[None]:
        """A fenced write transaction with `schemas` attached as s0, s1, ..., each the incarnation the
        registry names *inside* the transaction. A schema dropped and re-created between the attach and
        the transaction is attached again; one that is gone is NoSuchSchema. Without that check a call
        attached before a drop would write into the dropped incarnation's file and report success."""
        for _ in range(ATTACH_ATTEMPTS):
            attached = [self._attach(conn, f"s{i}", schema) for i, schema in enumerate(schemas)]
            with self._transaction(conn, fence):
                current = [registry.file_of(conn, schema) for schema in schemas]
                if current == attached:
                    yield
                    return
                for schema, file_name in zip(schemas, current, strict=True):
                    if file_name is None:
                        raise self._no_such_schema(schema)
            for i in range(len(schemas)):
                conn.execute(f"DETACH DATABASE s{i}")
        raise errors.ConnectionFailed(
            f"Schema {', '.join(schemas)} of SQLite catalog {self.context.catalog} was re-created "
            f"{ATTACH_ATTEMPTS} times while this call attached it; nothing was changed (try again)"
        )

    @contextmanager
    def _transaction(self, conn: sqlite3.Connection, fence: Fence) -> Iterator[None]:
        """One write transaction whose first statement checks and records the call's fence."""
        failpoints.hit("sqlite.before_begin", catalog=self.context.catalog, scope=fence.key, fence=fence.token)
        conn.execute("BEGIN IMMEDIATE")
        fences.check_and_record(conn, fence, self.context.catalog)
        yield
        conn.execute("COMMIT")
        if isinstance(conn, _Connection):
            conn.committed = True

    def _nothing_to_do(self, conn: sqlite3.Connection, fence: Fence) -> bool:
        """A drop that finds nothing still checks its fence: a stale call must be refused as stale (the
        journal reads a refusal as "did not land"), not answer "not there" as if it had looked in time."""
        with self._transaction(conn, fence):
            return False

    def prepare_engine(self) -> None:
        """Create the catalog file (with its registry and fence tables) when the catalog is created."""
        with self._connect(create=True) as conn:
            if not failpoints.disabled_for_test("engine_identity"):  # TEST-ONLY
                self.remember_identity(identity.read_or_make(conn))

    def fence_barrier(self, fence: Fence) -> None:
        """Record the fence in the catalog file (StaleFence if a higher one was seen)."""
        with self._connect(fence) as conn, self._transaction(conn, fence):
            pass

    @staticmethod
    def _table_name(conn: sqlite3.Connection, alias: str, name: str) -> str | None:
        """The stored name of the table SQLite would resolve `name` to (SQLite is case-insensitive)."""
        row = conn.execute(
            f"SELECT name FROM {alias}.sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE", (name,)
        ).fetchone()
        return row[0] if row else None

    @staticmethod
    def _user_tables(conn: sqlite3.Connection, alias: str) -> list[str]:
        rows = conn.execute(
            f"SELECT name FROM {alias}.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
        )
        return sorted(r[0] for r in rows)

    # ---------------------------------------------------------------- schemas

    def create_schema(self, schema: Schema, *, fence: Fence = NO_FENCE) -> None:
        """Register the schema with a file of a new incarnation, made for it; an existing *empty* schema
        is accepted (a repeated create), one with tables is a conflict."""
        quote(schema.name)  # rejects NUL
        with self._connect(fence, create=True, writes=True) as conn:
            registry.sweep(conn, self._schema_dir())
            if registry.file_of(conn, schema.name) is not None:
                with self._transaction(conn, fence):
                    if self._exists_empty(conn, schema.name, fence):
                        return
                # dropped between the look and the transaction: create it
            file_name = registry.allocate(conn, schema.name)
            registered = False
            try:
                conn.execute("ATTACH DATABASE ? AS s0", (_uri(self._schema_path(file_name), create=True),))
                failpoints.hit("sqlite.schema_file_made", catalog=self.context.catalog, schema=schema.name)
                with self._transaction(conn, fence):
                    if self._exists_empty(conn, schema.name, fence):  # created by another call meanwhile
                        return
                    registry.register(conn, schema.name, file_name)
                    conn.execute(f"PRAGMA s0.application_id = {APPLICATION_ID}")
                registered = True
            finally:
                if not registered:
                    if conn.in_transaction:
                        conn.rollback()
                    if any(row[1] == "s0" for row in conn.execute("PRAGMA database_list")):
                        conn.execute("DETACH DATABASE s0")
                    registry.abandon(conn, self._schema_dir(), file_name)

    def _exists_empty(self, conn: sqlite3.Connection, schema: str, fence: Fence) -> bool:
        """Inside a create's transaction: whether `schema` is registered; SchemaAlreadyExists if with tables."""
        file_name = registry.file_of(conn, schema)
        if file_name is None:
            return False
        if self._tables_in(file_name, fence):
            raise errors.SchemaAlreadyExists(
                f"Schema {schema} already exists in SQLite catalog {self.context.catalog} with tables"
            )
        return True

    def drop_schema(self, name: str, cascade: bool, *, fence: Fence = NO_FENCE) -> bool:
        """Unregister the schema and make its file a tombstone in one fenced transaction (the commit
        point), then delete the file. Whenever this call goes on after its commit, the file it deletes is
        that of the incarnation it dropped: a schema re-created since has a file of its own."""
        with self._connect(fence, writes=True) as conn:
            with self._transaction(conn, fence):
                file_name = registry.file_of(conn, name)
                if file_name is None:
                    return False
                tables = self._tables_in(file_name, fence)
                if tables and not cascade:
                    raise errors.NonEmptySchema(f"Schema {name} is not empty; it has {len(tables)} table(s)")
                registry.unregister(conn, name, file_name)
            failpoints.hit("sqlite.schema_unregistered", catalog=self.context.catalog, schema=name)
            registry.sweep(conn, self._schema_dir())
        return True

    def list_schemas(self) -> list[str]:
        with self._connect() as conn:
            return [r[0] for r in conn.execute(f"SELECT name FROM {registry.REGISTRY} ORDER BY name")]

    def load_schema(self, name: str) -> Schema:
        """A registered schema; SQLite keeps no comment or properties for it."""
        with self._connect() as conn:
            if registry.file_of(conn, name) is None:
                raise self._no_such_schema(name)
            return Schema(name)

    # ---------------------------------------------------------------- tables

    def list_tables(self, schema: str) -> list[str]:
        with self._connect() as conn:
            self._attach(conn, "s0", schema)
            return self._user_tables(conn, "s0")

    def load_table(self, schema: str, name: str) -> Table:
        """The table as SQLite describes it (describe.py); its name as stored, matched exactly."""
        with self._connect() as conn:
            self._attach(conn, "s0", schema)
            if self._table_name(conn, "s0", name) != name:
                raise errors.NoSuchTable(f"Table {schema}.{name} does not exist in SQLite catalog {self.context.catalog}")
            return describe_table(conn, "s0", name)

    def as_described(self, table: Table) -> Table:
        """Each column's type as describe_table reads back the affinity gravimeta declares for it."""
        return replace(table, columns=[replace(c, type=described_type(c.type)) for c in table.columns])

    def check_table(self, table: Table) -> None:
        check_table(table)

    def create_table(self, schema: str, table: Table, *, fence: Fence = NO_FENCE) -> None:
        """CREATE TABLE; a table that already exists with the same shape is accepted (a repeated create)."""
        ddl = table_ddl("s0", table)
        with self._connect(fence, writes=True) as conn, self._writing(conn, fence, schema):
            existing = self._table_name(conn, "s0", table.name)
            if existing is not None:
                if existing == table.name and real_shape(conn, "s0", existing) == desired_shape(table):
                    return
                raise errors.TableAlreadyExists(
                    f"Table {schema}.{existing} already exists in SQLite catalog {self.context.catalog}"
                    " (SQLite table names are case-insensitive)"
                )
            conn.execute(ddl)

    def drop_table(self, schema: str, name: str, *, fence: Fence = NO_FENCE) -> bool:
        with self._connect(fence, writes=True) as conn:
            if registry.file_of(conn, schema) is None:
                return self._nothing_to_do(conn, fence)
            with self._writing(conn, fence, schema):
                if self._table_name(conn, "s0", name) != name:
                    return False
                conn.execute(f"DROP TABLE s0.{quote(name)}")
                return True

    def purge_table(self, schema: str, name: str, *, fence: Fence = NO_FENCE) -> bool:
        """A dropped SQLite table's rows are gone with it, so purge is drop."""
        return self.drop_table(schema, name, fence=fence)

    def rename_table(self, schema: str, name: str, new_schema: str, new_name: str, *,
                     fence: Fence = NO_FENCE) -> None:
        """ALTER TABLE RENAME within a schema; across schemas, create + copy + drop in one transaction
        spanning both files. Repeating a rename that already happened is accepted."""
        if new_name.lower().startswith("sqlite_"):
            raise errors.IllegalArgument(f"Table name {new_name!r}: SQLite reserves names starting with sqlite_")
        if schema == new_schema and name == new_name:
            return
        target = "s0" if new_schema == schema else "s1"
        with self._connect(fence, writes=True) as conn, self._writing(conn, fence, *dict.fromkeys((schema, new_schema))):
            source = self._table_name(conn, "s0", name)
            existing = self._table_name(conn, target, new_name)
            if source != name:
                if existing == new_name:
                    return  # already renamed
                raise errors.NoSuchTable(f"Table {schema}.{name} does not exist in SQLite catalog")
            same_table = target == "s0" and name.lower() == new_name.lower()
            if existing is not None and not same_table:
                raise errors.TableAlreadyExists(f"Table {new_schema}.{existing} already exists in SQLite catalog")
            if target == "s0":
                if same_table:  # SQLite refuses a case-only rename; go through a temporary name
                    temporary = f"gravimeta_tmp_{uuid.uuid4().hex}"
                    conn.execute(f"ALTER TABLE s0.{quote(name)} RENAME TO {quote(temporary)}")
                    name = temporary
                conn.execute(f"ALTER TABLE s0.{quote(name)} RENAME TO {quote(new_name)}")
            else:
                self._move(conn, name, new_name)

    @staticmethod
    def _move(conn: sqlite3.Connection, name: str, new_name: str) -> None:
        sql = conn.execute("SELECT sql FROM s0.sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()[0]
        prefix = f"CREATE TABLE {quote(name)}"
        if not sql.startswith(prefix):
            raise errors.UnsupportedOperation(
                f"Table {name} was not created by gravimeta; it cannot be moved to another schema"
            )
        conn.execute(f"CREATE TABLE s1.{quote(new_name)}{sql[len(prefix):]}")
        conn.execute(f"INSERT INTO s1.{quote(new_name)} SELECT * FROM s0.{quote(name)}")
        conn.execute(f"DROP TABLE s0.{quote(name)}")

    def alter_table(self, schema: str, before: Table, after: Table, *, fence: Fence = NO_FENCE) -> None:
        """Make the real table match `after`: RENAME/DROP/ADD COLUMN in place when that reaches the
        target shape, otherwise rebuild it (create new, copy, drop old, rename) in one transaction.
        A table that already has the target shape is left alone, so a repeated alter is a no-op."""
        target = desired_shape(after)
        table_ddl("s0", after)  # validates keys and auto-increment before anything changes
        with self._connect(fence, writes=True) as conn, self._writing(conn, fence, schema), integrity(after.name):
            if self._table_name(conn, "s0", after.name) != after.name:
                raise errors.NoSuchTable(f"Table {schema}.{after.name} does not exist in SQLite catalog")
            current = real_shape(conn, "s0", after.name)
            if same_by_affinity(current, target):
                return
            real_names = [c[0] for c in current[0]]
            renames = infer_renames(before, after) if real_names == [c.name for c in before.columns] else {}
            plan = in_place_plan(f"s0.{quote(after.name)}", current, target, renames)
            if plan is None:
                rebuild(conn, after, real_names, renames)
            else:
                for statement in plan:
                    conn.execute(statement)

    def test_connection(self) -> None:
        """The catalog file must be a readable SQLite database, or, before first use, its directory
        must be creatable and writable."""
        path = self.path
        if path.exists():
            check_single_link(path, errors.ConnectionFailed, f"SQLite catalog file {self._label}")
            try:
                conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=2)
                conn.text_factory = engine_text
                try:
                    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                    conn.execute(f"SELECT name, file FROM {registry.REGISTRY}").fetchall()
                finally:
                    conn.close()
            except UnreadableText as exc:
                raise exc.error(self._label) from None
            except sqlite3.OperationalError as exc:
                if "no such table" not in str(exc):  # a file made before gravimeta used it has no registry yet
                    raise errors.ConnectionFailed(f"SQLite catalog file {self._label} is not usable: {exc}",
                                                  detail=str(path)) from exc
            except sqlite3.Error as exc:
                raise errors.ConnectionFailed(f"SQLite catalog file {self._label} is not usable: {exc}",
                                              detail=str(path)) from exc
            return
        existing = next(p for p in path.parents if p.exists())
        if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
            raise errors.ConnectionFailed(
                f"SQLite catalog file {self._label} cannot be created: its directory is not writable",
                detail=f"{path}: {existing} is not a writable directory",
            )


class UnreadableText(Exception):
    """Raised by engine_text while a row is read: text in a catalog or schema file that is not UTF-8, or
    that no metadata store can hold. The connector turns it into a 502 (error())."""

    def __init__(self, what: str):
        super().__init__(what)
        self.what = what

    def error(self, label: str) -> errors.ConnectionFailed:
        return errors.ConnectionFailed(f"SQLite catalog file {label} (or one of its schema files) holds {self.what}: "
                                       "gravimeta cannot read it as a name")


class _Connection(sqlite3.Connection):
    """A connection that knows whether a fenced transaction of its call committed (_connect's `writes`)."""

    committed = False


def engine_text(raw: bytes) -> str:
    """The text factory of every connection: strict UTF-8, and text a metadata store can hold, else
    UnreadableText naming the value (escaped: the message itself must be storable and printable)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UnreadableText(f"text that is not UTF-8 ({raw[:80]!r})") from None
    character = capacity.unstorable_character(text)
    if character is not None:
        raise UnreadableText(f"{character} in {text[:80]!r}")
    return text


@contextmanager
def _unreadable_as_502(label: str) -> Iterator[None]:
    """UnreadableText becomes its 502. The finished frames it was raised through are cleared first: one of
    them holds the cursor that was reading the row (a generator's iterator, a local), and a cursor left
    mid-statement keeps its file locked (SQLite's shared lock; a close only defers) for as long as the
    error's traceback lives, which is past this request when a reference cycle holds it. Before, the next
    write to that schema file answered "database is locked"."""
    try:
        yield
    except UnreadableText as exc:
        traceback.clear_frames(exc.__traceback__)  # frames still running (this one, the callers) are kept
        raise exc.error(label) from None


def _uri(path: Path, create: bool) -> str:
    """An SQLite URI for `path`: mode=rw never creates a missing file (it fails instead), mode=rwc may."""
    return f"{path.as_uri()}?mode={'rwc' if create else 'rw'}"


#: an SQLite URI in an error's text ("unable to open database: file:///root/.../x.sqlite?mode=rw")
_FILE_URI = re.compile(r"file:\S+")
#: SQLite's primary result codes that mean the file cannot be used as a database: BUSY, LOCKED, READONLY,
#: IOERR, CORRUPT, FULL, CANTOPEN, NOTADB
_UNUSABLE_CODES = frozenset({5, 6, 8, 10, 11, 13, 14, 26})


@contextmanager
def _translated(label: str, path: Path) -> Iterator[None]:
    """SQLite errors that mean the catalog file (or a schema file in its directory) is unusable - locked,
    unreadable, damaged or not a database - become ConnectionFailed (502): the engine is broken, not the
    request. Messages name the file by its `path` property (`label`); the absolute path goes to the log."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.IntegrityError | sqlite3.ProgrammingError):
            raise
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
        text = str(exc).lower()
        if code in _UNUSABLE_CODES or any(k in text for k in (
                "locked", "busy", "unable to open", "readonly", "disk i/o", "not a database", "malformed")):
            damaged = code in (11, 26) or "not a database" in text or "malformed" in text
            what = "is damaged or not a database" if damaged else "is not usable"
            shown = _FILE_URI.sub("<file>", str(exc)).replace(str(path), "<file>")  # ATTACH names its file: not sent
            raise errors.ConnectionFailed(f"SQLite catalog file {label} (or one of its schema files) {what}: {shown}",
                                          detail=f"{path}: {exc}") from exc
        raise
