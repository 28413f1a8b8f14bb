"""The `jdbc-postgresql` provider: a catalog is one PostgreSQL database, a Gravitino schema a PostgreSQL
schema, a table a table (Gravitino 1.3's PostgreSQL catalog; docs/engines.md).

Fences are checked by PostgreSQL itself (pgfences.py): every mutating call is one transaction that
checks and records its fence first, then runs its DDL, then commits. A call of a holder that lost its
claim is refused by the database (StaleFence) once a newer holder's call or barrier has committed, and
one that passed its check holds the fence rows' locks until its own commit, so that a barrier waits for
it. Its transaction is bounded by its deadline: statement_timeout and lock_timeout for each statement,
idle_in_transaction_session_timeout for the whole transaction, so that PostgreSQL ends (and rolls
back) the transaction of a holder paused in the middle of it once its claim has run out, and a barrier
behind it gets its locks.

Reads run in one REPEATABLE READ, READ ONLY transaction each, so a description is one snapshot.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import psycopg

from connectors.base import NO_FENCE, Fence
from connectors.jdbc import failures, pgddl, pgdescribe, pgfences, pgtypes
from connectors.jdbc.common import Deadline, JdbcConnector, as_checked, catalog_properties
from connectors.jdbc.failures import Phase
from connectors.jdbc.plan import plan
from connectors.jdbc.sqltext import PG_NAMES, pg_ident
from gravimeta import errors, failpoints
from gravimeta.entities import Schema, Table

#: an index or constraint name the schema already has (42P07 is PostgreSQL's "relation already exists",
#: also for indexes), in a call that made sure the table itself is not there
_NAME_TAKEN: dict[str, type[errors.GravitinoError]] = {"42P07": errors.IllegalArgument}
#: a table that other objects (views, foreign keys) depend on
_DEPENDENTS: dict[str, type[errors.GravitinoError]] = {"2BP01": errors.IllegalArgument}


class Transaction:
    """One transaction of a call: each statement's timeouts are what is left of the call."""

    def __init__(self, cur: Any, deadline: Deadline):
        self.cur, self.deadline = cur, deadline

    def limits(self, left_ms: int) -> None:
        """The transaction's timeouts: `left_ms`, what was left of the call when it last looked."""
        left = str(left_ms)
        idle = "0" if failpoints.disabled_for_test("jdbc_session_timeout") else left  # TEST-ONLY when off: none
        self.cur.execute("SELECT set_config('statement_timeout', %s, true), set_config('lock_timeout', %s, true), "
                         "set_config('idle_in_transaction_session_timeout', %s, true)", (left, left, idle))

    def run(self, statement: str, params: Any = None) -> None:
        """One statement, with the timeouts (the idle one too) of what is left of the call now, so that a
        holder paused after it keeps its locks no longer than its claim."""
        self.limits(max(1, int(self.deadline.left_now() * 1000)))
        self.cur.execute(statement, params)


class PostgreSQLConnector(JdbcConnector):
    kind, engine_name, names = "postgresql", "PostgreSQL", PG_NAMES
    catalog_properties = catalog_properties("postgresql")

    error_of = staticmethod(failures.postgresql)

    @classmethod
    def driver_errors(cls) -> tuple[type[Exception], ...]:
        return (psycopg.Error,)

    # ---------------------------------------------------------------- transactions

    @contextmanager
    def _transaction(self, fence: Fence, what: str, *, fenced: bool = True, read_only: bool = False,
                     refusals: dict[str, type[errors.GravitinoError]] | None = None) -> Iterator[Transaction]:
        """One transaction on a pooled connection, committed when the block ends without an error. A
        fenced one checks and records `fence` first. `refusals`: SQLSTATEs that mean something else in
        this call than failures.py says (an index name taken, where the table was looked for first)."""
        deadline = Deadline(fence)
        with self.pool.raw(deadline.at, what) as conn:
            phase, committed = Phase.BEFORE, False
            try:
                left = deadline.left_ms()  # the last look at the deadline before the fence check
                if fenced:  # a holder paused here sends what follows late: the fence check must refuse it
                    failpoints.hit("jdbc.before_begin", catalog=self.context.catalog, scope=fence.key,
                                   fence=fence.token)
                cur = conn.cursor()
                if read_only:
                    cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                tx = Transaction(cur, deadline)
                tx.limits(left)
                if fenced:
                    self._check_fence(tx, fence)
                yield tx
                if fenced:
                    failpoints.hit("jdbc.before_commit", catalog=self.context.catalog, scope=fence.key,
                                   fence=fence.token)
                phase = Phase.APPLYING
                conn.commit()
                committed = True
            except psycopg.Error as exc:
                special = (refusals or {}).get(getattr(exc, "sqlstate", None) or "")
                if special is not None:
                    raise special(f"{self.label()} refused {what}: {str(exc).strip().splitlines()[0]}") from exc
                raise self.translate(exc, phase, what) from exc
            finally:
                if not committed:
                    _abandon(conn)

    def _check_fence(self, tx: Transaction, fence: Fence) -> None:
        try:
            pgfences.check_and_record(tx.cur, fence, self.label())
        except psycopg.Error as exc:
            if getattr(exc, "sqlstate", None) in (pgfences.MISSING, "3F000"):
                raise pgfences.missing(self.label()) from exc
            raise

    @contextmanager
    def _reading(self, what: str, deadline: float | None = None) -> Iterator[Any]:
        with self._transaction(Fence(deadline=deadline) if deadline is not None else NO_FENCE, what, fenced=False,
                               read_only=True) as tx:
            yield tx.cur

    # ---------------------------------------------------------------- the engine's home and identity

    def prepare_engine(self) -> None:
        """The fence schema, its tables and the database's identity (made where missing)."""
        self.remember_identity(self._make_home())

    def _make_home(self) -> str:
        for attempt in range(2):
            try:
                with self._transaction(NO_FENCE, "the creation of gravimeta's fence schema", fenced=False) as tx:
                    return pgfences.make(tx.cur)
            except (errors.IllegalArgument, errors.AlreadyExists):
                if attempt:  # two creates of the schema at once: one wins, the other looks again
                    raise
        raise AssertionError("unreachable")

    def engine_identity(self, deadline: float | None = None) -> str | None:
        """The id kept in the fence schema; the schema is made now in a database that has none yet."""
        if self._known_identity:
            return self._known_identity
        if failpoints.disabled_for_test("engine_identity"):  # TEST-ONLY: none
            return None
        with self._reading("a read of the database's identity", deadline) as cur:
            found = pgfences.identity(cur)
        return self.remember_identity(found or self._make_home())

    def fence_barrier(self, fence: Fence) -> None:
        with self._transaction(fence, "a fence barrier"):
            pass

    # ---------------------------------------------------------------- schemas

    def create_schema(self, schema: Schema, *, fence: Fence = NO_FENCE) -> None:
        """CREATE SCHEMA with its comment; an existing empty schema is accepted (a repeated create)."""
        self.names.check("SCHEMA", schema.name)
        if schema.name == pgfences.SCHEMA:
            raise errors.IllegalArgument(f"The SCHEMA name '{schema.name}' is reserved by gravimeta for its fences.")
        if schema.properties:
            raise errors.UnsupportedOperation("PostgreSQL does not support properties on database create.")
        with self._transaction(fence, f"the creation of schema {schema.name}") as tx:
            oid = pgdescribe.schema_oid(tx.cur, schema.name)
            if oid is not None:
                if pgdescribe.list_tables(tx.cur, oid):
                    raise errors.SchemaAlreadyExists(f"Schema {schema.name} already exists in {self.label()} with tables")
                return
            tx.run(f"CREATE SCHEMA {pg_ident(schema.name)}")
            if schema.comment:
                tx.run(f"COMMENT ON SCHEMA {pg_ident(schema.name)} IS {pgddl.comment_sql(schema.comment)}")

    def drop_schema(self, name: str, cascade: bool, *, fence: Fence = NO_FENCE) -> bool:
        with self._transaction(fence, f"the drop of schema {name}") as tx:
            oid = pgdescribe.schema_oid(tx.cur, name)
            if oid is None:
                return False
            tables = pgdescribe.list_tables(tx.cur, oid)
            if tables and not cascade:
                raise errors.NonEmptySchema(f"Schema {name} is not empty; it has {len(tables)} table(s)")
            tx.run(f"DROP SCHEMA {pg_ident(name)}{' CASCADE' if cascade else ''}")
            return True

    def list_schemas(self) -> list[str]:
        with self._reading("the list of schemas") as cur:
            return pgdescribe.list_schemas(cur)

    def load_schema(self, name: str) -> Schema:
        with self._reading(f"the load of schema {name}") as cur:
            oid = pgdescribe.schema_oid(cur, name)
            if oid is None:
                raise self._no_such_schema(name)
            return pgdescribe.load_schema(cur, oid, name)

    # ---------------------------------------------------------------- tables

    def list_tables(self, schema: str) -> list[str]:
        with self._reading(f"the list of tables of {schema}") as cur:
            return pgdescribe.list_tables(cur, self._schema(cur, schema))

    def load_table(self, schema: str, name: str) -> Table:
        with self._reading(f"the load of table {schema}.{name}") as cur:
            oid = pgdescribe.table_oid(cur, self._schema(cur, schema), name)
            if oid is None:
                raise self._no_such_table(schema, name)
            return pgdescribe.describe(cur, oid, name).table

    def _schema(self, cur: Any, schema: str) -> int:
        oid = pgdescribe.schema_oid(cur, schema)
        if oid is None:
            raise self._no_such_schema(schema)
        return oid

    def as_described(self, table: Table) -> Table:
        """Each column's type as PostgreSQL reads back what gravimeta declares (pgtypes.described); key and
        identity columns as NOT NULL."""
        keyed = {path[0] for index in table.indexes if str(index.get("indexType", "")).upper() == "PRIMARY_KEY"
                 for path in index.get("fieldNames", []) if path}
        return replace(table, columns=[
            replace(c, type=pgtypes.described(c.type), nullable=c.nullable and not c.auto_increment and c.name not in keyed)
            for c in table.columns])

    def check_table(self, table: Table) -> None:
        """What PostgreSQL (and Gravitino's PostgreSQL catalog) cannot hold: the layout, properties, a type
        without a PostgreSQL type, a default that cannot be written, an index other than a primary or
        unique key."""
        self.check_layout(table)
        if table.properties:
            raise errors.IllegalArgument("Properties are not supported yet: PostgreSQL tables have no properties")
        pgddl.create_table("s", as_checked(table))

    def create_table(self, schema: str, table: Table, *, fence: Fence = NO_FENCE) -> None:
        """CREATE TABLE with its comments; a table that already exists with the same columns is accepted."""
        self.check_new_names(table)
        self.check_table(table)
        statements = pgddl.create_table(schema, table)
        with self._transaction(fence, f"the creation of table {schema}.{table.name}", refusals=_NAME_TAKEN) as tx:
            oid = pgdescribe.table_oid(tx.cur, self._schema(tx.cur, schema), table.name)
            if oid is not None:
                if _shape(pgdescribe.describe(tx.cur, oid, table.name).table) == _shape(self.as_described(table)):
                    return
                raise errors.TableAlreadyExists(f"Table {schema}.{table.name} already exists in {self.label()}")
            for statement in statements:
                tx.run(statement)

    def drop_table(self, schema: str, name: str, *, fence: Fence = NO_FENCE) -> bool:
        with self._transaction(fence, f"the drop of table {schema}.{name}", refusals=_DEPENDENTS) as tx:
            schema_oid = pgdescribe.schema_oid(tx.cur, schema)
            if schema_oid is None or pgdescribe.table_oid(tx.cur, schema_oid, name) is None:
                return False
            tx.run(f"DROP TABLE {pgddl.qualified(schema, name)}")
            return True

    def rename_table(self, schema: str, name: str, new_schema: str, new_name: str, *,
                     fence: Fence = NO_FENCE) -> None:
        """RENAME TO within a schema, SET SCHEMA (and a rename) into another; repeating a rename that
        already happened is accepted."""
        if (schema, name) == (new_schema, new_name):
            return
        self.names.check("TABLE", new_name)
        with self._transaction(fence, f"the rename of table {schema}.{name} to {new_schema}.{new_name}") as tx:
            source_schema = pgdescribe.schema_oid(tx.cur, schema)
            target_schema = self._schema(tx.cur, new_schema)
            source = None if source_schema is None else pgdescribe.table_oid(tx.cur, source_schema, name)
            target = pgdescribe.table_oid(tx.cur, target_schema, new_name)
            if source is None:
                if target is not None:
                    return  # renamed already
                raise self._no_such_table(schema, name) if source_schema is not None else self._no_such_schema(schema)
            if target is not None:
                raise errors.TableAlreadyExists(f"Table {new_schema}.{new_name} already exists in {self.label()}")
            if new_schema == schema:
                tx.run(f"ALTER TABLE {pgddl.qualified(schema, name)} RENAME TO {pg_ident(new_name)}")
                return
            moving = name
            if name != new_name and pgdescribe.table_oid(tx.cur, target_schema, name) is not None:
                moving = f"gravimeta_tmp_{source}"  # the target schema has a table of the old name
                tx.run(f"ALTER TABLE {pgddl.qualified(schema, name)} RENAME TO {pg_ident(moving)}")
            tx.run(f"ALTER TABLE {pgddl.qualified(schema, moving)} SET SCHEMA {pg_ident(new_schema)}")
            if moving != new_name:
                tx.run(f"ALTER TABLE {pgddl.qualified(new_schema, moving)} RENAME TO {pg_ident(new_name)}")

    def alter_table(self, schema: str, before: Table, after: Table, *, fence: Fence = NO_FENCE) -> None:
        """Make the table look like `after` (plan.py, pgddl.py), in one transaction; a table that already
        looks so is left alone."""
        known = {c.name for c in before.columns}
        self.check_new_names(after, [c.name for c in after.columns if c.name not in known])
        self.check_table(after)
        with self._transaction(fence, f"the alter of table {schema}.{after.name}", refusals=_NAME_TAKEN) as tx:
            oid = pgdescribe.table_oid(tx.cur, self._schema(tx.cur, schema), after.name)
            if oid is None:
                raise self._no_such_table(schema, after.name)
            current = pgdescribe.describe(tx.cur, oid, after.name)
            steps = plan(before, after, current.table, pgtypes.described)
            for statement in pgddl.alter_table(schema, after.name, steps, current.constraints):
                tx.run(statement)


def _shape(table: Table) -> list[tuple[str, Any, bool]]:
    return [(c.name, c.type, c.nullable) for c in table.columns]


def _abandon(conn: Any) -> None:
    """After a failed call: roll back, and never hand out a connection whose state is unknown."""
    try:
        conn.rollback()
    except Exception:
        try:
            conn.invalidate()
        except Exception:
            pass
