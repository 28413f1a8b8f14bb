"""The `jdbc-mysql` provider: a catalog is one MySQL or MariaDB server, a Gravitino schema a database, a
table a table (Gravitino 1.3's MySQL catalog; docs/engines.md).

Fences (myfences.py): MySQL commits DDL on its own, so a mutating call holds its catalog's named lock
from before its fence check until its one DDL statement has returned, and a barrier takes the same lock.
Every wait of a call is bounded by its deadline: the lock wait (GET_LOCK's timeout), each statement
(MariaDB's max_statement_time, MySQL's max_execution_time for reads), metadata and row lock waits
(lock_wait_timeout, innodb_lock_wait_timeout) and the session's idle time (wait_timeout), the last
three in whole seconds. The session's settings are put back before its connection returns to the
pool; a connection whose lock or settings could not be put back is closed instead.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pymysql

from connectors.base import NO_FENCE, CatalogContext, Fence
from connectors.jdbc import failures, myddl, mydescribe, myfences, mytypes
from connectors.jdbc.common import Deadline, JdbcConnector, as_checked, catalog_properties
from connectors.jdbc.failures import Phase
from connectors.jdbc.plan import plan
from connectors.jdbc.sqltext import MYSQL_NAMES, Quoting, my_ident
from connectors.properties import PropertyEntry
from gravimeta import errors, failpoints
from gravimeta.entities import Schema, Table

FENCE_KEY = "gravimeta.fence-database"
#: how long after its lock waits' end a statement is stopped
STATEMENT_SLACK_S = 0.5


def _fence_database(value: str) -> str:
    MYSQL_NAMES.check("SCHEMA", value)
    return value


class Call:
    """One call's session: its statements, and where the call is (nothing applied yet, or its DDL sent)."""

    def __init__(self, conn: Any, cur: Any, deadline: Deadline, mariadb: bool):
        self.conn, self.cur, self.deadline, self.mariadb = conn, cur, deadline, mariadb
        self.phase = Phase.BEFORE
        self.quoting = Quoting(my_ident, lambda text: conn.escape(text))

    def limits(self, left: float | None = None) -> None:
        """The session's timeouts from what is left of the call (`left`: as it was when the call last
        looked; now by default). The statement limit comes half a second
        after the lock waits', so that a statement still waiting for its lock ends by the lock wait's
        error (it did not start: nothing was changed) rather than by the statement limit's (which may
        also stop a statement half through)."""
        left = self.deadline.left_now() if left is None else left
        whole = max(1, math.ceil(left))
        settings = [f"lock_wait_timeout = {whole}", f"innodb_lock_wait_timeout = {whole}"]
        if not failpoints.disabled_for_test("jdbc_session_timeout"):  # TEST-ONLY when off: the server's own
            settings.append(f"wait_timeout = {whole}")
        limit = whole + STATEMENT_SLACK_S
        settings.append(f"max_statement_time = {limit:.3f}" if self.mariadb else f"max_execution_time = {int(limit * 1000)}")
        self.cur.execute("SET SESSION " + ", ".join(settings))

    def apply(self, statement: str) -> None:
        """The call's DDL: from now on a lost answer leaves the outcome open."""
        self.limits()
        self.phase = Phase.APPLYING
        self.cur.execute(statement)


class MySQLConnector(JdbcConnector):
    kind, engine_name, names = "mysql", "MySQL", MYSQL_NAMES
    catalog_properties = catalog_properties("mysql", PropertyEntry(
        FENCE_KEY, f"the database that keeps gravimeta's fences on the server (default {myfences.DEFAULT_DATABASE})",
        immutable=True, decode=_fence_database))

    def __init__(self, context: CatalogContext):
        super().__init__(context)
        self.fence_database = context.properties.get(FENCE_KEY, myfences.DEFAULT_DATABASE)
        self._mariadb: bool | None = None

    error_of = staticmethod(failures.mysql)

    @classmethod
    def driver_errors(cls) -> tuple[type[Exception], ...]:
        return (pymysql.Error,)

    # ---------------------------------------------------------------- sessions

    @contextmanager
    def _session(self, fence: Fence, what: str, *, fenced: bool = True) -> Iterator[Call]:
        """A pooled session for one call. A fenced call with a token holds the catalog's named lock and
        has checked and recorded its fence when the block starts."""
        deadline = Deadline(fence)
        with self.pool.raw(deadline.at, what) as conn:
            cur = conn.cursor()
            call, locked = None, False
            try:
                call = Call(conn, cur, deadline, self._is_mariadb(cur))
                left = deadline.left()  # the last look at the deadline before the fence check
                if fenced:  # a holder paused here sends what follows late: the fence check must refuse it
                    failpoints.hit("jdbc.before_begin", catalog=self.context.catalog, scope=fence.key,
                                   fence=fence.token)
                call.limits(left)
                if fenced and fence.token is not None:
                    if not failpoints.disabled_for_test("jdbc_named_lock"):  # TEST-ONLY when off: the check alone
                        cur.execute("SELECT GET_LOCK(%s, %s)", (myfences.lock_name(fence.key), left))
                        if cur.fetchone()[0] != 1:
                            raise errors.EngineUnreachable(
                                f"{self.label()} is busy with another call of catalog {self.context.catalog} "
                                f"(its named lock was not free in time); nothing was sent for {what}")
                        locked = True
                    self._check_fence(cur, fence)
                    failpoints.hit("jdbc.after_check", catalog=self.context.catalog, scope=fence.key,
                                   fence=fence.token)
                yield call
            except pymysql.Error as exc:
                raise self.translate(exc, call.phase if call else Phase.BEFORE, what) from exc
            finally:
                if not self._tidy(cur, locked):
                    _invalidate(conn)

    def _tidy(self, cur: Any, locked: bool) -> bool:
        """Release the named lock and put the session's timeouts back; False when that failed."""
        try:
            if locked:
                cur.execute("SELECT RELEASE_ALL_LOCKS()")
            cur.execute("SET SESSION lock_wait_timeout = DEFAULT, innodb_lock_wait_timeout = DEFAULT, "
                        "wait_timeout = DEFAULT, " + ("max_statement_time = DEFAULT" if self._mariadb
                                                      else "max_execution_time = DEFAULT"))
            return True
        except Exception:
            return False

    def _is_mariadb(self, cur: Any) -> bool:
        if self._mariadb is None:
            cur.execute("SELECT VERSION()")
            self._mariadb = "mariadb" in str(cur.fetchone()[0]).lower()
        return self._mariadb

    def _check_fence(self, cur: Any, fence: Fence) -> None:
        if not myfences.exists(cur, self.fence_database):
            raise errors.EngineUnreachable(
                f"{self.label()} has no fence database {self.fence_database}, in which gravimeta checks the fences "
                "of its calls: nothing was sent. It is made when the catalog is created or its properties change")
        myfences.check_and_record(cur, self.fence_database, fence, self.label())

    # ---------------------------------------------------------------- the engine's home and identity

    def prepare_engine(self) -> None:
        self.remember_identity(self._make_home())

    def _make_home(self) -> str:
        with self._session(NO_FENCE, "the creation of gravimeta's fence database", fenced=False) as call:
            return myfences.make(call.cur, self.fence_database)

    def engine_identity(self, deadline: float | None = None) -> str | None:
        if self._known_identity:
            return self._known_identity
        if failpoints.disabled_for_test("engine_identity"):  # TEST-ONLY: none
            return None
        with self._session(Fence(deadline=deadline) if deadline is not None else NO_FENCE,
                           "a read of the server's identity", fenced=False) as call:
            found = myfences.identity(call.cur, self.fence_database)
        return self.remember_identity(found or self._make_home())

    def fence_barrier(self, fence: Fence) -> None:
        with self._session(fence, "a fence barrier"):
            pass

    # ---------------------------------------------------------------- schemas

    def create_schema(self, schema: Schema, *, fence: Fence = NO_FENCE) -> None:
        """CREATE DATABASE; an existing empty database is accepted. MySQL keeps no schema comment or
        properties (Gravitino refuses them)."""
        self.names.check("SCHEMA", schema.name)
        if mydescribe.hidden(schema.name, self.fence_database):
            raise errors.IllegalArgument(f"The SCHEMA name '{schema.name}' is reserved and cannot be used.")
        if schema.comment:
            raise errors.UnsupportedOperation(f"Doesn't support setting schema comment: {schema.comment}")
        if schema.properties:
            raise errors.UnsupportedOperation("Properties are not supported yet.")
        with self._session(fence, f"the creation of schema {schema.name}") as call:
            if mydescribe.schema_exists(call.cur, schema.name, self.fence_database):
                if mydescribe.list_tables(call.cur, schema.name):
                    raise errors.SchemaAlreadyExists(f"Schema {schema.name} already exists in {self.label()} with tables")
                return
            call.apply(f"CREATE DATABASE {my_ident(schema.name)}")

    def drop_schema(self, name: str, cascade: bool, *, fence: Fence = NO_FENCE) -> bool:
        with self._session(fence, f"the drop of schema {name}") as call:
            if not mydescribe.schema_exists(call.cur, name, self.fence_database):
                return False
            tables = mydescribe.list_tables(call.cur, name)
            if tables and not cascade:
                raise errors.NonEmptySchema(f"Database {name} is not empty, the value of cascade should be true.")
            call.apply(f"DROP DATABASE {my_ident(name)}")
            return True

    def list_schemas(self) -> list[str]:
        with self._session(NO_FENCE, "the list of schemas", fenced=False) as call:
            return mydescribe.list_schemas(call.cur, self.fence_database)

    def load_schema(self, name: str) -> Schema:
        with self._session(NO_FENCE, f"the load of schema {name}", fenced=False) as call:
            if not mydescribe.schema_exists(call.cur, name, self.fence_database):
                raise self._no_such_schema(name)
            return mydescribe.load_schema(name)

    # ---------------------------------------------------------------- tables

    def _schema(self, call: Call, schema: str) -> None:
        if not mydescribe.schema_exists(call.cur, schema, self.fence_database):
            raise self._no_such_schema(schema)

    def list_tables(self, schema: str) -> list[str]:
        with self._session(NO_FENCE, f"the list of tables of {schema}", fenced=False) as call:
            self._schema(call, schema)
            return mydescribe.list_tables(call.cur, schema)

    def _describe(self, call: Call, schema: str, name: str) -> mydescribe.Described | None:
        row = mydescribe.table_row(call.cur, schema, name)
        return None if row is None else mydescribe.describe(call.cur, schema, name, row)

    def load_table(self, schema: str, name: str) -> Table:
        with self._session(NO_FENCE, f"the load of table {schema}.{name}", fenced=False) as call:
            self._schema(call, schema)
            described = self._describe(call, schema, name)
            if described is None:
                raise self._no_such_table(schema, name)
            return described.table

    def as_described(self, table: Table) -> Table:
        """Each column's type as MySQL reads back what gravimeta declares (time(0), timestamp(0), ...);
        primary key columns as NOT NULL."""
        keyed = {path[0] for index in table.indexes if str(index.get("indexType", "")).upper() == "PRIMARY_KEY"
                 for path in index.get("fieldNames", []) if path}
        return replace(table, columns=[replace(c, type=mytypes.described(c.type), nullable=c.nullable and c.name not in keyed)
                                       for c in table.columns])

    def check_table(self, table: Table) -> None:
        self.check_layout(table)
        myddl.create_table("s", as_checked(table), Quoting(my_ident, _quote))

    def create_table(self, schema: str, table: Table, *, fence: Fence = NO_FENCE) -> None:
        self.check_new_names(table)
        self.check_table(table)
        myddl.create_table(schema, table, Quoting(my_ident, _quote))  # all of it, before anything is sent
        with self._session(fence, f"the creation of table {schema}.{table.name}") as call:
            self._schema(call, schema)
            existing = self._describe(call, schema, table.name)
            if existing is not None:
                if _shape(existing.table) == _shape(self.as_described(table)):
                    return
                raise errors.TableAlreadyExists(f"Table {schema}.{table.name} already exists in {self.label()}")
            call.apply(myddl.create_table(schema, table, call.quoting))

    def drop_table(self, schema: str, name: str, *, fence: Fence = NO_FENCE) -> bool:
        with self._session(fence, f"the drop of table {schema}.{name}") as call:
            if not mydescribe.schema_exists(call.cur, schema, self.fence_database) \
                    or mydescribe.table_row(call.cur, schema, name) is None:
                return False
            call.apply(f"DROP TABLE {myddl.qualified(schema, name)}")
            return True

    def rename_table(self, schema: str, name: str, new_schema: str, new_name: str, *,
                     fence: Fence = NO_FENCE) -> None:
        """RENAME TABLE, within a database or into another; repeating a rename that already happened is
        accepted."""
        if (schema, name) == (new_schema, new_name):
            return
        self.names.check("TABLE", new_name)
        with self._session(fence, f"the rename of table {schema}.{name} to {new_schema}.{new_name}") as call:
            self._schema(call, new_schema)
            source_schema = mydescribe.schema_exists(call.cur, schema, self.fence_database)
            source = source_schema and mydescribe.table_row(call.cur, schema, name) is not None
            target = mydescribe.table_row(call.cur, new_schema, new_name) is not None
            if not source:
                if target:
                    return  # renamed already
                raise self._no_such_table(schema, name) if source_schema else self._no_such_schema(schema)
            if target:
                raise errors.TableAlreadyExists(f"Table {new_schema}.{new_name} already exists in {self.label()}")
            call.apply(f"RENAME TABLE {myddl.qualified(schema, name)} TO {myddl.qualified(new_schema, new_name)}")

    def alter_table(self, schema: str, before: Table, after: Table, *, fence: Fence = NO_FENCE) -> None:
        """One ALTER TABLE that makes the table look like `after` (plan.py, myddl.py); nothing when it does."""
        known = {c.name for c in before.columns}
        self.check_new_names(after, [c.name for c in after.columns if c.name not in known])
        self.check_table(after)
        myddl.check_property_changes(before, after)
        with self._session(fence, f"the alter of table {schema}.{after.name}") as call:
            self._schema(call, schema)
            current = self._describe(call, schema, after.name)
            if current is None:
                raise self._no_such_table(schema, after.name)
            statement = myddl.alter_table(schema, after.name, plan(before, after, current.table, mytypes.described),
                                          current, call.quoting)
            if statement is not None:
                call.apply(statement)


def _quote(text: str) -> str:
    """A literal for the checks that build DDL without a connection (never sent)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


def _shape(table: Table) -> list[tuple[str, Any, bool]]:
    return [(c.name, c.type, c.nullable) for c in table.columns]


def _invalidate(conn: Any) -> None:
    """A connection whose named lock or session settings may be left: never handed out again."""
    try:
        conn.invalidate()
    except Exception:
        pass
