"""The SQLite connector (`provider: sqlite`): a catalog is a real SQLite database file.

Layout. The catalog property `path` names the catalog file, relative to the catalog root directory
(env GRAVIMETA_SQLITE_CATALOG_ROOT, default `<GRAVIMETA_HOME or ./var>/sqlite-catalogs`); the resolved
path must stay inside the root. A Gravitino schema is an SQLite *schema* in SQLite's own sense, an
attached database file: `<path>.schemas/<slug>-<hash>.sqlite`. The catalog file holds one table,
`gravimeta_schemas(name, file)`, which is the real list of schemas, so `list_schemas` reads the
catalog and any SQLite tool can `ATTACH` a schema file and see ordinary tables with their real names.

Why attached files rather than a table-name prefix: tables keep their real names (no ambiguous
`schema.table` encoding of arbitrary names), dropping a schema with all its tables is one row delete
plus one file unlink, and every operation that spans a schema and the catalog (create/drop schema,
move a table between schemas) is still one SQLite transaction, because SQLite commits a transaction
over attached rollback-journal databases atomically (super-journal). Files are named from a hash, so
any schema name (quotes, unicode, 128 characters, names equal up to case) maps to a short, distinct,
portable file name; the registry row keeps the real name.

Tables are real tables: Gravitino column types map to SQLite affinities (the Gravitino type itself
stays in the EntityStore), NOT NULL, representable defaults, PRIMARY KEY / UNIQUE from the table's
indexes. Every identifier is double-quoted with quotes doubled; values travel as bound parameters or
as quoted literals, so no name can inject SQL. Comments, properties, partitioning, distribution and
sort orders have no SQLite counterpart and live in the EntityStore only.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from connectors.base import CatalogContext, Connector, PropertySpec
from gravimeta import errors
from gravimeta.entities import Column, Schema, Table

ROOT_ENV = "GRAVIMETA_SQLITE_CATALOG_ROOT"
REGISTRY = "gravimeta_schemas"
APPLICATION_ID = 0x47524D53  # "GRMS": marks a schema file written by gravimeta
SQLITE_VERSION = tuple(int(p) for p in sqlite3.sqlite_version.split("."))
CAN_RENAME_COLUMN = SQLITE_VERSION >= (3, 25, 0)
CAN_DROP_COLUMN = SQLITE_VERSION >= (3, 35, 0)


# --------------------------------------------------------------------- paths


def catalog_root() -> Path:
    """The directory every sqlite catalog lives under; read at call time, never at import."""
    configured = os.environ.get(ROOT_ENV)
    if configured:
        return Path(configured)
    home = os.environ.get("GRAVIMETA_HOME")
    return (Path(home) if home else Path.cwd() / "var") / "sqlite-catalogs"


def resolve_catalog_path(raw: str, root: Path | None = None) -> Path:
    """The catalog file for property `path`, or IllegalArgument when it is absolute, contains `..`,
    or resolves (through symlinks) outside the root."""
    if not raw or "\x00" in raw:
        raise errors.IllegalArgument("Catalog property 'path' must be a non-empty relative file path")
    if PurePosixPath(raw).is_absolute() or PureWindowsPath(raw).is_absolute() or raw.startswith("\\"):
        raise errors.IllegalArgument(f"Catalog property 'path' must be relative to the catalog root, not {raw!r}")
    parts = PurePosixPath(raw.replace("\\", "/")).parts
    if ".." in parts:
        raise errors.IllegalArgument(f"Catalog property 'path' must not contain '..': {raw!r}")
    base = (root or catalog_root()).resolve()
    target = (base / Path(*parts)).resolve()
    for path in (target, target.with_name(target.name + ".schemas").resolve()):
        if path == base or not path.is_relative_to(base):
            raise errors.IllegalArgument(f"Catalog property 'path' {raw!r} resolves outside the catalog root")
    return target


def quote(identifier: str) -> str:
    """An SQL identifier for any string: double quotes, inner quotes doubled."""
    if "\x00" in identifier:
        raise errors.IllegalArgument("Names must not contain NUL characters")
    return '"' + identifier.replace('"', '""') + '"'


def literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def schema_file_name(schema: str) -> str:
    """A short, portable, collision-free file name for any schema name."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "_", schema)[:40].strip("_") or "schema"
    digest = hashlib.sha256(schema.encode("utf-8")).hexdigest()[:16]
    return f"{slug}-{digest}.sqlite"


# --------------------------------------------------------------------- types and DDL

_INTEGRAL = re.compile(r"^(byte|short|integer|long)( unsigned)?$")
_UNPARSED_OK = re.compile(r"^[A-Za-z][A-Za-z ]{0,40}(\(\s*\d+\s*(,\s*\d+\s*)?\))?$")


def affinity(gravitino_type: Any) -> str:
    """The SQLite declared type for a Gravitino type: one of the five affinities."""
    if isinstance(gravitino_type, dict):
        if gravitino_type.get("type") == "unparsed":
            raw = gravitino_type["unparsedType"].strip()
            if not _UNPARSED_OK.match(raw):
                raise errors.IllegalArgument(f"Unparsed type {raw!r} is not an SQLite type name")
            return raw.upper()
        return "TEXT"  # list/map/struct/union/external: stored as JSON text
    t = str(gravitino_type)
    if _INTEGRAL.match(t):
        return "INTEGER"
    if t in ("float", "double"):
        return "REAL"
    if t == "boolean" or t.startswith("decimal("):
        return "NUMERIC"
    if t in ("binary", "null") or t.startswith("fixed("):
        return "BLOB"
    return "TEXT"  # string, varchar, char, date/time/timestamp (ISO-8601 text), uuid, interval, variant, geo


_NUMBER = re.compile(r"^[+-]?\d+(\.\d+)?([eE][+-]?\d+)?$")
_FUNCTIONS = {"current_timestamp": "CURRENT_TIMESTAMP", "now": "CURRENT_TIMESTAMP",
              "current_date": "CURRENT_DATE", "current_time": "CURRENT_TIME"}


def default_sql(column: Column) -> str | None:
    """The DEFAULT clause body, or None when the default is not representable in SQLite (it stays in
    the EntityStore only)."""
    value = column.default_value
    if not isinstance(value, dict):
        return None
    if value.get("type") == "literal":
        text = value.get("value")
        if text is None:
            return "NULL"
        kind = affinity(column.type)
        if column.type == "boolean" and text.lower() in ("true", "false"):
            return "1" if text.lower() == "true" else "0"
        if kind in ("INTEGER", "REAL", "NUMERIC") and _NUMBER.match(text):
            return text
        return literal(text)
    if value.get("type") == "function" and not value.get("funcArgs"):
        return _FUNCTIONS.get(str(value.get("funcName", "")).lower())
    return None


def _index_columns(index: dict[str, Any]) -> list[str]:
    return [path[0] for path in index.get("fieldNames", [])]


def _keys(table: Table) -> tuple[list[str], list[tuple[str | None, list[str]]]]:
    primary = [i for i in table.indexes if str(i.get("indexType", "")).upper() == "PRIMARY_KEY"]
    if len(primary) > 1:
        raise errors.IllegalArgument(f"Table {table.name} declares more than one primary key")
    unique = [(i.get("name"), _index_columns(i)) for i in table.indexes
              if str(i.get("indexType", "")).upper() == "UNIQUE_KEY"]
    return (_index_columns(primary[0]) if primary else []), unique


def table_ddl(alias: str, table: Table) -> str:
    """CREATE TABLE for `table` in attached database `alias`."""
    if table.name.lower().startswith("sqlite_"):
        raise errors.IllegalArgument(f"Table name {table.name!r}: SQLite reserves names starting with sqlite_")
    pk, unique = _keys(table)
    primary = next((i for i in table.indexes if str(i.get("indexType", "")).upper() == "PRIMARY_KEY"), None)
    inline_pk = None
    for column in table.columns:
        if column.auto_increment:
            if pk != [column.name] or affinity(column.type) != "INTEGER":
                raise errors.IllegalArgument(
                    f"Column {column.name}: SQLite supports auto-increment only on a single-column integer primary key"
                )
            inline_pk = column.name
    parts = []
    for column in table.columns:
        sql = f"{quote(column.name)} {affinity(column.type)}"
        if column.name == inline_pk:
            sql += " PRIMARY KEY AUTOINCREMENT"
        if not column.nullable:
            sql += " NOT NULL"
        default = default_sql(column)
        if default is not None:
            sql += f" DEFAULT {default}"
        parts.append(sql)
    if pk and inline_pk is None:
        name = f"CONSTRAINT {quote(primary['name'])} " if primary and primary.get("name") else ""
        parts.append(f"{name}PRIMARY KEY ({', '.join(quote(c) for c in pk)})")
    for index_name, columns in unique:
        name = f"CONSTRAINT {quote(index_name)} " if index_name else ""
        parts.append(f"{name}UNIQUE ({', '.join(quote(c) for c in columns)})")
    return f"CREATE TABLE {alias}.{quote(table.name)} ({', '.join(parts)})"


# A table's shape as SQLite reports it: columns (name, declared type, notnull, default, pk ordinal)
# and its UNIQUE column sets. Two tables with the same shape are the same table for gravimeta.
Shape = tuple[tuple[tuple[str, str, int, str | None, int], ...], frozenset[tuple[str, ...]]]


def desired_shape(table: Table) -> Shape:
    pk, unique = _keys(table)
    columns = tuple(
        (c.name, affinity(c.type), int(not c.nullable), default_sql(c), pk.index(c.name) + 1 if c.name in pk else 0)
        for c in table.columns
    )
    return columns, frozenset(tuple(cols) for _, cols in unique)


def real_shape(conn: sqlite3.Connection, alias: str, name: str) -> Shape:
    columns = tuple(
        (row[1], row[2], row[3], row[4], row[5])
        for row in conn.execute(f"PRAGMA {alias}.table_xinfo({quote(name)})")
        if row[6] == 0
    )
    unique = set()
    for row in conn.execute(f"PRAGMA {alias}.index_list({quote(name)})"):
        if row[2] and row[3] == "u":
            info = conn.execute(f"PRAGMA {alias}.index_info({quote(row[1])})").fetchall()
            unique.add(tuple(r[2] for r in sorted(info)))
    return columns, frozenset(unique)


def infer_renames(before: Table, after: Table) -> dict[str, str]:
    """Old name -> new name for columns renamed between `before` and `after`.

    The SPI passes the two table states, not the change list, so a rename is recognised as an
    unmatched old column and an unmatched new column in the same slot (after the same surviving
    column) with every attribute but the name equal. That is exactly what renameColumn produces. A
    rename combined with a move or a type change in the same request looks like drop+add (the column's
    data is lost), and a drop plus an add of an identical column in the same slot looks like a rename
    (the data is kept under the new name)."""
    old_names = [c.name for c in before.columns]
    new_names = [c.name for c in after.columns]
    kept = set(old_names) & set(new_names)

    def slots(names: list[str]) -> dict[str | None, list[str]]:
        result: dict[str | None, list[str]] = {}
        anchor: str | None = None
        for n in names:
            if n in kept:
                anchor = n
            else:
                result.setdefault(anchor, []).append(n)
        return result

    def attributes(table: Table, column_name: str) -> tuple[Any, ...]:
        c = table.column(column_name)
        assert c is not None
        return (c.type, c.nullable, c.auto_increment, c.default_value, c.comment)

    old_slots, new_slots = slots(old_names), slots(new_names)
    renames: dict[str, str] = {}
    for anchor, olds in old_slots.items():
        candidates = list(new_slots.get(anchor, []))
        for old in olds:
            match = next((n for n in candidates if attributes(after, n) == attributes(before, old)), None)
            if match is not None:
                renames[old] = match
                candidates = candidates[candidates.index(match) + 1:]
    return renames


# --------------------------------------------------------------------- the connector


class SQLiteCatalogConnector(Connector):
    property_specs = (
        PropertySpec("path", required=True, description="catalog file, relative to the sqlite catalog root"),
        PropertySpec("busy-timeout-ms", description="how long to wait for another writer (default 5000)"),
    )
    supports_purge = True

    def __init__(self, context: CatalogContext):
        super().__init__(context)
        self.validate_properties(context.properties)

    @classmethod
    def validate_properties(cls, properties: dict[str, str]) -> None:
        super().validate_properties(properties)
        resolve_catalog_path(properties["path"])
        timeout = properties.get("busy-timeout-ms")
        if timeout is not None and (not timeout.isdigit() or int(timeout) > 600_000):
            raise errors.IllegalArgument("Catalog property 'busy-timeout-ms' must be an integer from 0 to 600000")

    # ---------------------------------------------------------------- plumbing

    @property
    def path(self) -> Path:
        """Resolved on every use, so a symlink planted after creation cannot lead outside the root."""
        return resolve_catalog_path(self.context.properties["path"])

    def _schema_dir(self) -> Path:
        return self.path.with_name(self.path.name + ".schemas")

    def _schema_path(self, file_name: str) -> Path:
        schema_dir = self._schema_dir()
        target = (schema_dir / file_name).resolve()
        if target.parent != schema_dir.resolve():
            raise errors.IllegalArgument(f"Schema file {file_name!r} resolves outside the catalog's directory")
        return target

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        path = self.path
        timeout = int(self.context.properties.get("busy-timeout-ms", "5000")) / 1000
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._schema_dir().mkdir(exist_ok=True)
            conn = sqlite3.connect(path, isolation_level=None, timeout=timeout)
        except (OSError, sqlite3.Error) as exc:
            raise errors.ConnectionFailed(f"Cannot open SQLite catalog file {path}: {exc}") from exc
        try:
            with _translated(path):
                conn.execute(f"CREATE TABLE IF NOT EXISTS {REGISTRY} (name TEXT PRIMARY KEY, file TEXT NOT NULL UNIQUE)")
                yield conn
        finally:
            if conn.in_transaction:
                conn.rollback()
            conn.close()

    def _file_of(self, conn: sqlite3.Connection, schema: str) -> str | None:
        row = conn.execute(f"SELECT file FROM {REGISTRY} WHERE name = ?", (schema,)).fetchone()
        return row[0] if row else None

    def _attach(self, conn: sqlite3.Connection, alias: str, schema: str) -> None:
        file_name = self._file_of(conn, schema)
        if file_name is None:
            raise errors.NoSuchSchema(f"Schema {schema} does not exist in SQLite catalog {self.context.catalog}")
        conn.execute(f"ATTACH DATABASE ? AS {alias}", (str(self._schema_path(file_name)),))

    @contextmanager
    def _transaction(self, conn: sqlite3.Connection) -> Iterator[None]:
        conn.execute("BEGIN IMMEDIATE")
        yield
        conn.execute("COMMIT")

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

    def create_schema(self, schema: Schema) -> None:
        """Register the schema and create its file in one transaction; an existing *empty* schema is
        accepted (a repeated create), one with tables is a conflict."""
        file_name = schema_file_name(schema.name)
        quote(schema.name)  # rejects NUL
        with self._connect() as conn:
            if self._file_of(conn, schema.name) is None:
                self._remove_orphan(self._schema_path(file_name))
            conn.execute("ATTACH DATABASE ? AS s0", (str(self._schema_path(file_name)),))
            with self._transaction(conn):
                if self._file_of(conn, schema.name) is not None:
                    if self._user_tables(conn, "s0"):
                        raise errors.SchemaAlreadyExists(
                            f"Schema {schema.name} already exists in SQLite catalog {self.context.catalog} with tables"
                        )
                    return
                conn.execute(f"INSERT INTO {REGISTRY} (name, file) VALUES (?, ?)", (schema.name, file_name))
                conn.execute(f"PRAGMA s0.application_id = {APPLICATION_ID}")

    @staticmethod
    def _remove_orphan(path: Path) -> None:
        """A schema file without a registry row is what a drop interrupted before its unlink left."""
        for suffix in ("", "-journal", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)

    def drop_schema(self, name: str, cascade: bool) -> bool:
        """Delete the registry row (the commit point), then the file."""
        with self._connect() as conn:
            file_name = self._file_of(conn, name)
            if file_name is None:
                return False
            self._attach(conn, "s0", name)
            with self._transaction(conn):
                tables = self._user_tables(conn, "s0")
                if tables and not cascade:
                    raise errors.NonEmptySchema(f"Schema {name} is not empty; it has {len(tables)} table(s)")
                conn.execute(f"DELETE FROM {REGISTRY} WHERE name = ?", (name,))
            conn.execute("DETACH DATABASE s0")
        self._remove_orphan(self._schema_path(file_name))
        return True

    def list_schemas(self) -> list[str]:
        with self._connect() as conn:
            return [r[0] for r in conn.execute(f"SELECT name FROM {REGISTRY} ORDER BY name")]

    # ---------------------------------------------------------------- tables

    def list_tables(self, schema: str) -> list[str]:
        with self._connect() as conn:
            self._attach(conn, "s0", schema)
            return self._user_tables(conn, "s0")

    def create_table(self, schema: str, table: Table) -> None:
        """CREATE TABLE; a table that already exists with the same shape is accepted (a repeated create)."""
        ddl = table_ddl("s0", table)
        with self._connect() as conn:
            self._attach(conn, "s0", schema)
            with self._transaction(conn):
                existing = self._table_name(conn, "s0", table.name)
                if existing is not None:
                    if existing == table.name and real_shape(conn, "s0", existing) == desired_shape(table):
                        return
                    raise errors.TableAlreadyExists(
                        f"Table {schema}.{existing} already exists in SQLite catalog {self.context.catalog}"
                        " (SQLite table names are case-insensitive)"
                    )
                conn.execute(ddl)

    def drop_table(self, schema: str, name: str) -> bool:
        with self._connect() as conn:
            if self._file_of(conn, schema) is None:
                return False
            self._attach(conn, "s0", schema)
            with self._transaction(conn):
                if self._table_name(conn, "s0", name) != name:
                    return False
                conn.execute(f"DROP TABLE s0.{quote(name)}")
                return True

    def purge_table(self, schema: str, name: str) -> bool:
        """A dropped SQLite table's rows are gone with it, so purge is drop."""
        return self.drop_table(schema, name)

    def rename_table(self, schema: str, name: str, new_schema: str, new_name: str) -> None:
        """ALTER TABLE RENAME within a schema; across schemas, create + copy + drop in one transaction
        spanning both files. Repeating a rename that already happened is accepted."""
        if new_name.lower().startswith("sqlite_"):
            raise errors.IllegalArgument(f"Table name {new_name!r}: SQLite reserves names starting with sqlite_")
        if schema == new_schema and name == new_name:
            return
        with self._connect() as conn:
            self._attach(conn, "s0", schema)
            target = "s0"
            if new_schema != schema:
                self._attach(conn, "s1", new_schema)
                target = "s1"
            with self._transaction(conn):
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

    def alter_table(self, schema: str, before: Table, after: Table) -> None:
        """Make the real table match `after`: RENAME/DROP/ADD COLUMN in place when that reaches the
        target shape, otherwise rebuild it (create new, copy, drop old, rename) in one transaction.
        A table that already has the target shape is left alone, so a repeated alter is a no-op."""
        target = desired_shape(after)
        table_ddl("s0", after)  # validates keys and auto-increment before anything changes
        with self._connect() as conn:
            self._attach(conn, "s0", schema)
            with self._transaction(conn), _integrity(after.name):
                if self._table_name(conn, "s0", after.name) != after.name:
                    raise errors.NoSuchTable(f"Table {schema}.{after.name} does not exist in SQLite catalog")
                current = real_shape(conn, "s0", after.name)
                if current == target:
                    return
                real_names = [c[0] for c in current[0]]
                renames = infer_renames(before, after) if real_names == [c.name for c in before.columns] else {}
                plan = _in_place_plan(f"s0.{quote(after.name)}", current, target, renames)
                if plan is None:
                    self._rebuild(conn, after, real_names, renames)
                else:
                    for statement in plan:
                        conn.execute(statement)

    @staticmethod
    def _rebuild(conn: sqlite3.Connection, after: Table, real_names: list[str], renames: dict[str, str]) -> None:
        temporary = f"gravimeta_rebuild_{uuid.uuid4().hex}"
        conn.execute(table_ddl("s0", Table(temporary, after.columns, indexes=after.indexes)))
        source_of = {renames.get(n, n): n for n in real_names}
        pairs = [(c.name, source_of[c.name]) for c in after.columns if c.name in source_of]
        if pairs:
            conn.execute(
                f"INSERT INTO s0.{quote(temporary)} ({', '.join(quote(n) for n, _ in pairs)}) "
                f"SELECT {', '.join(quote(o) for _, o in pairs)} FROM s0.{quote(after.name)}"
            )
        conn.execute(f"DROP TABLE s0.{quote(after.name)}")
        conn.execute(f"ALTER TABLE s0.{quote(temporary)} RENAME TO {quote(after.name)}")

    def test_connection(self) -> None:
        """The catalog file must be a readable SQLite database, or, before first use, its directory
        must be creatable and writable."""
        path = self.path
        if path.exists():
            try:
                conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=2)
                try:
                    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                finally:
                    conn.close()
            except sqlite3.Error as exc:
                raise errors.ConnectionFailed(f"SQLite catalog file {path} is not usable: {exc}") from exc
            return
        existing = next(p for p in path.parents if p.exists())
        if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
            raise errors.ConnectionFailed(f"SQLite catalog file {path} cannot be created: {existing} is not writable")


def _in_place_plan(table_sql: str, current: Shape, target: Shape, renames: dict[str, str]) -> list[str] | None:
    """The RENAME/DROP/ADD COLUMN statements that turn `current` into `target`, or None when SQLite
    cannot get there in place (type, nullability, default, key or order changes)."""
    if renames and not CAN_RENAME_COLUMN:
        return None
    statements = [
        f"ALTER TABLE {table_sql} RENAME COLUMN {quote(old)} TO {quote(new)}" for old, new in renames.items()
    ]
    columns = [(renames.get(c[0], c[0]), *c[1:]) for c in current[0]]
    unique = frozenset(tuple(renames.get(n, n) for n in cols) for cols in current[1])
    keyed = {c[0] for c in columns if c[4]} | {n for cols in unique for n in cols}
    target_names = {c[0] for c in target[0]}
    for column in [c for c in columns if c[0] not in target_names]:
        if not CAN_DROP_COLUMN or column[0] in keyed:
            return None
        statements.append(f"ALTER TABLE {table_sql} DROP COLUMN {quote(column[0])}")
        columns.remove(column)
    for column in target[0][len(columns):]:
        name, declared, notnull, default, pk = column
        if pk or (notnull and default in (None, "NULL")) or default in _FUNCTIONS.values():
            return None  # SQLite's ADD COLUMN cannot add keys, NOT NULL without default, or non-constant defaults
        sql = f"ALTER TABLE {table_sql} ADD COLUMN {quote(name)} {declared}"
        sql += " NOT NULL" if notnull else ""
        sql += f" DEFAULT {default}" if default is not None else ""
        statements.append(sql)
        columns.append(column)
    if tuple(columns) != target[0] or unique != target[1]:
        return None
    return statements


@contextmanager
def _integrity(table: str) -> Iterator[None]:
    try:
        yield
    except sqlite3.IntegrityError as exc:
        raise errors.IllegalArgument(f"Cannot change table {table} with its existing rows: {exc}") from exc


@contextmanager
def _translated(path: Path) -> Iterator[None]:
    """SQLite errors that mean the catalog file is unusable become ConnectionFailed."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        text = str(exc).lower()
        if any(k in text for k in ("locked", "busy", "unable to open", "readonly", "disk i/o", "not a database")):
            raise errors.ConnectionFailed(f"SQLite catalog file {path} is not usable: {exc}") from exc
        raise
    except sqlite3.DatabaseError as exc:
        if "not a database" in str(exc).lower():
            raise errors.ConnectionFailed(f"SQLite catalog file {path} is not a database: {exc}") from exc
        raise
