"""EntityStore on SQLite, PostgreSQL and MariaDB: CRUD of the whole tree, names, conflicts,
cascade drops in one transaction, versions, and rollback of failed work."""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter

import pytest
from sqlalchemy import func, select, text, update

from gravimeta import errors
from gravimeta.entities import Catalog, Column, Metalake, Schema
from gravimeta.store import EntityStore
from gravimeta.store.models import CatalogRow, ColumnRow, MetalakeRow, SchemaRow, TableRow
from tests.store.tree import USER, Tree, table_of

ROW_TYPES = (MetalakeRow, CatalogRow, SchemaRow, TableRow, ColumnRow)


def row_counts(store: EntityStore) -> dict[str, int]:
    with store.engine.connect() as conn:
        return {r.__tablename__: conn.scalar(select(func.count()).select_from(r)) for r in ROW_TYPES}


def set_property(key: str, value: str):
    def mutate(entity):
        entity.properties[key] = value
        return entity

    return mutate


def renamed(name: str):
    return lambda entity: dataclasses.replace(entity, name=name)


# --------------------------------------------------------------------------- CRUD


def test_metalake_crud_round_trips_and_bumps_the_version(store, unique):
    name = f"lake_{unique}"
    created = store.create_metalake(Metalake(name, "a comment", {"k": "v"}), USER)
    assert (created.name, created.comment, created.properties, created.version) == (name, "a comment", {"k": "v"}, 1)
    assert created.audit.creator == USER and created.audit.create_time

    assert store.get_metalake(name) == created
    assert name in [m.name for m in store.list_metalakes()]

    before, after = store.update_metalake(name, set_property("k2", "v2"), "other")
    assert before == created
    assert after.properties == {"k": "v", "k2": "v2"} and after.version == 2
    assert after.audit.last_modifier == "other"
    _, after = store.update_metalake(name, lambda m: dataclasses.replace(m, comment="new"), USER)
    assert after.version == 3
    assert store.get_metalake(name) == after

    _, moved = store.update_metalake(name, renamed(name + "_x"), USER)
    assert moved.name == name + "_x" and moved.version == 4
    with pytest.raises(errors.NoSuchMetalake):
        store.get_metalake(name)

    assert store.drop_metalake(name + "_x", cascade=False) is True
    assert store.drop_metalake(name + "_x", cascade=False) is False
    with pytest.raises(errors.NoSuchMetalake):
        store.get_metalake(name + "_x")


def test_catalog_and_schema_crud(store, unique):
    m = f"lake_{unique}"
    store.create_metalake(Metalake(m), USER)
    catalog = store.create_catalog(Catalog(m, "cat", "relational", "memory", "c", {"a": "1"}), USER)
    assert store.get_catalog(m, "cat") == catalog and catalog.version == 1
    assert [c.name for c in store.list_catalogs(m)] == ["cat"]
    _, after = store.update_catalog(m, "cat", set_property("b", "2"), USER)
    assert after.properties == {"a": "1", "b": "2"} and after.version == 2
    _, after = store.update_catalog(m, "cat", renamed("cat2"), USER)
    assert [c.name for c in store.list_catalogs(m)] == ["cat2"]

    schema = store.create_schema(m, "cat2", Schema("sch", "s", {"x": "y"}), USER)
    assert store.get_schema(m, "cat2", "sch") == schema
    _, after = store.update_schema(m, "cat2", "sch", set_property("x", "z"), USER)
    assert after.properties == {"x": "z"} and after.version == 2
    assert [s.name for s in store.list_schemas(m, "cat2")] == ["sch"]

    assert store.drop_schema(m, "cat2", "sch", cascade=False) is True
    assert store.drop_schema(m, "cat2", "sch", cascade=False) is False
    assert store.drop_catalog(m, "cat2", cascade=False) is True
    assert store.list_catalogs(m) == []


def test_table_crud_keeps_columns_in_order_and_replaces_them_on_change(store, tree: Tree):
    columns = [
        Column("id", "long", nullable=False, auto_increment=True),
        Column("price", {"type": "decimal", "precision": 10, "scale": 2}, "in €"),
        Column("note", "varchar(10)", default_value={"type": "literal", "dataType": "string", "value": "x"}),
    ]
    table = table_of(
        "orders", columns=columns, comment="c", properties={"p": "1"},
        partitioning=[{"strategy": "identity", "fieldName": ["id"]}],
        distribution={"strategy": "hash", "number": 4, "funcArgs": []},
    )
    created = store.create_table(tree.m, tree.c, tree.s, table, USER)
    assert created.columns == columns and created.version == 1
    loaded = store.get_table(tree.m, tree.c, tree.s, "orders")
    assert loaded == created
    assert (loaded.partitioning, loaded.distribution) == (table.partitioning, table.distribution)
    assert store.list_tables(tree.m, tree.c, tree.s) == ["orders"]

    def drop_note_add_qty(t):
        t.columns = [t.columns[1], t.columns[0], Column("qty", "integer")]
        return t

    _, after = store.update_table(tree.m, tree.c, tree.s, "orders", drop_note_add_qty, USER)
    assert [c.name for c in after.columns] == ["price", "id", "qty"] and after.version == 2
    assert store.get_table(tree.m, tree.c, tree.s, "orders") == after

    store.create_schema(tree.m, tree.c, Schema("other"), USER)
    _, moved = store.update_table(tree.m, tree.c, tree.s, "orders", renamed("orders2"), USER, new_schema="other")
    assert store.list_tables(tree.m, tree.c, tree.s) == []
    assert store.get_table(tree.m, tree.c, "other", "orders2").columns == after.columns

    assert store.drop_table(tree.m, tree.c, "other", "orders2") is True
    assert store.drop_table(tree.m, tree.c, "other", "orders2") is False
    assert row_counts(store)["gm_column"] == 0


def test_creating_under_a_missing_parent_raises_no_such_parent(store, tree: Tree):
    with pytest.raises(errors.NoSuchMetalake):
        store.create_catalog(Catalog("nope", "c", "relational", "memory"), USER)
    with pytest.raises(errors.NoSuchCatalog):
        store.create_schema(tree.m, "nope", Schema("s"), USER)
    with pytest.raises(errors.NoSuchSchema):
        store.create_table(tree.m, tree.c, "nope", table_of("t"), USER)
    with pytest.raises(errors.NoSuchTable):
        store.get_table(tree.m, tree.c, tree.s, "nope")
    with pytest.raises(errors.NoSuchTable):
        store.update_table(tree.m, tree.c, tree.s, "nope", set_property("a", "b"), USER)


# --------------------------------------------------------------------------- names


def test_names_are_case_sensitive_at_every_level(store, unique):
    for m in (f"Sales_{unique}", f"sales_{unique}"):
        store.create_metalake(Metalake(m), USER)
    with pytest.raises(errors.NoSuchMetalake):
        store.get_metalake(f"SALES_{unique}")
    m = f"Sales_{unique}"
    for c in ("Cat", "cat"):
        store.create_catalog(Catalog(m, c, "relational", "memory"), USER)
    for s in ("Sch", "sch"):
        store.create_schema(m, "Cat", Schema(s), USER)
    for t in ("Orders", "orders"):
        store.create_table(m, "Cat", "sch", table_of(t, columns=[Column("Id", "long"), Column("id", "long")]), USER)
    assert [c.name for c in store.list_catalogs(m)] == sorted(["Cat", "cat"])
    assert [s.name for s in store.list_schemas(m, "Cat")] == sorted(["Sch", "sch"])
    assert store.list_tables(m, "Cat", "sch") == sorted(["Orders", "orders"])
    assert [c.name for c in store.get_table(m, "Cat", "sch", "orders").columns] == ["Id", "id"]
    with pytest.raises(errors.NoSuchTable):
        store.get_table(m, "Cat", "sch", "ORDERS")
    store.update_table(m, "Cat", "sch", "orders", set_property("k", "v"), USER)
    assert store.get_table(m, "Cat", "sch", "Orders").properties == {}


def test_trailing_spaces_make_a_different_name(store, unique):
    """MySQL's PAD SPACE collations would compare 'x' and 'x ' equal; names must stay byte-exact."""
    store.create_metalake(Metalake(f"x{unique}"), USER)
    store.create_metalake(Metalake(f"x{unique} "), USER)
    assert store.get_metalake(f"x{unique} ").name == f"x{unique} "
    assert store.drop_metalake(f"x{unique}", cascade=False)
    assert store.get_metalake(f"x{unique} ").name == f"x{unique} "


def test_unicode_names_and_properties_round_trip(store):
    names = ["销售数据", "Ünïcödé", "emoji🚀lake", "ÉTÉ", "été", "ete"]  # accents and case all count
    for name in names:
        store.create_metalake(Metalake(name, "ça va 🙂", {"clé": "välue 🚀"}), USER)
        store.create_catalog(Catalog(name, name, "relational", "memory"), USER)
        store.create_schema(name, name, Schema(name), USER)
        store.create_table(name, name, name, table_of(name, columns=[Column(name, "string", "ü")]), USER)
    assert sorted(m.name for m in store.list_metalakes()) == sorted(names)
    for name in names:
        loaded = store.get_metalake(name)
        assert (loaded.name, loaded.comment, loaded.properties) == (name, "ça va 🙂", {"clé": "välue 🚀"})
        assert store.get_table(name, name, name, name).columns[0].name == name
    assert store.drop_metalake("été", cascade=True)
    assert sorted(m.name for m in store.list_metalakes()) == sorted(set(names) - {"été"})


# --------------------------------------------------------------------------- conflicts


def test_duplicate_creates_raise_the_matching_already_exists(store, tree: Tree):
    before = row_counts(store)
    with pytest.raises(errors.MetalakeAlreadyExists):
        store.create_metalake(Metalake(tree.m), USER)
    with pytest.raises(errors.CatalogAlreadyExists):
        store.create_catalog(Catalog(tree.m, tree.c, "relational", "memory"), USER)
    with pytest.raises(errors.SchemaAlreadyExists):
        store.create_schema(tree.m, tree.c, Schema(tree.s), USER)
    store.create_table(tree.m, tree.c, tree.s, table_of("t"), USER)
    with pytest.raises(errors.TableAlreadyExists):
        store.create_table(tree.m, tree.c, tree.s, table_of("t", columns=[Column("other", "long")]), USER)
    assert store.get_table(tree.m, tree.c, tree.s, "t").columns == table_of("t").columns
    assert row_counts(store)["gm_table"] == before["gm_table"] + 1


def test_renaming_onto_an_existing_name_raises_already_exists_and_changes_nothing(store, tree: Tree):
    store.create_metalake(Metalake(tree.m + "_2"), USER)
    with pytest.raises(errors.MetalakeAlreadyExists):
        store.update_metalake(tree.m, renamed(tree.m + "_2"), USER)
    assert store.get_metalake(tree.m).version == 1

    store.create_catalog(Catalog(tree.m, "c2", "relational", "memory"), USER)
    with pytest.raises(errors.CatalogAlreadyExists):
        store.update_catalog(tree.m, tree.c, renamed("c2"), USER)

    for t in ("t1", "t2"):
        store.create_table(tree.m, tree.c, tree.s, table_of(t), USER)
    with pytest.raises(errors.TableAlreadyExists):
        store.update_table(tree.m, tree.c, tree.s, "t1", renamed("t2"), USER)
    store.create_schema(tree.m, tree.c, Schema("s2"), USER)
    store.create_table(tree.m, tree.c, "s2", table_of("t1"), USER)
    with pytest.raises(errors.TableAlreadyExists):  # a move onto a taken name in the target schema
        store.update_table(tree.m, tree.c, tree.s, "t1", lambda t: t, USER, new_schema="s2")
    assert store.list_tables(tree.m, tree.c, tree.s) == ["t1", "t2"]
    assert store.get_table(tree.m, tree.c, tree.s, "t1").version == 1


# --------------------------------------------------------------------------- drops


def _fill(store: EntityStore, tree: Tree) -> None:
    store.create_catalog(Catalog(tree.m, tree.c + "_b", "relational", "memory"), USER)
    store.create_schema(tree.m, tree.c, Schema(tree.s + "_b"), USER)
    for s in (tree.s, tree.s + "_b"):
        for t in ("t1", "t2"):
            store.create_table(tree.m, tree.c, s, table_of(t), USER)


def test_cascade_drop_of_a_metalake_removes_the_whole_subtree(store, tree: Tree, unique):
    other = Tree.create(store, unique + "_other")
    _fill(store, tree)
    _fill(store, other)
    filled = row_counts(store)

    with pytest.raises(errors.NonEmptyMetalake):
        store.drop_metalake(tree.m, cascade=False)
    assert row_counts(store) == filled

    assert store.drop_metalake(tree.m, cascade=True)
    assert row_counts(store) == {
        "gm_metalake": 1, "gm_catalog": 2, "gm_schema": 2, "gm_table": 4, "gm_column": 8,
    }
    assert store.list_tables(other.m, other.c, other.s) == ["t1", "t2"]


def test_cascade_drop_of_a_catalog_and_of_a_schema(store, tree: Tree):
    _fill(store, tree)
    filled = row_counts(store)
    with pytest.raises(errors.NonEmptySchema):
        store.drop_schema(tree.m, tree.c, tree.s, cascade=False)
    with pytest.raises(errors.NonEmptyCatalog):
        store.drop_catalog(tree.m, tree.c, cascade=False)
    assert row_counts(store) == filled

    assert store.drop_schema(tree.m, tree.c, tree.s, cascade=True)
    assert [s.name for s in store.list_schemas(tree.m, tree.c)] == [tree.s + "_b"]
    assert store.drop_catalog(tree.m, tree.c, cascade=True)
    assert row_counts(store) == {"gm_metalake": 1, "gm_catalog": 1, "gm_schema": 0, "gm_table": 0, "gm_column": 0}


def test_a_failing_precheck_keeps_the_metalake_and_its_subtree(store, tree: Tree):
    _fill(store, tree)
    filled = row_counts(store)

    def refuse(_):
        raise errors.MetalakeInUse("in use")

    with pytest.raises(errors.MetalakeInUse):
        store.drop_metalake(tree.m, cascade=True, precheck=refuse)
    assert row_counts(store) == filled


# --------------------------------------------------------------------------- transactions


def test_write_rolls_back_everything_when_the_work_raises(store, unique):
    before = row_counts(store)

    def work(s):
        s.add(MetalakeRow(name=f"a_{unique}", properties={}, in_use=True, version=1))
        s.flush()
        s.add(MetalakeRow(name=f"b_{unique}", properties={}, in_use=True, version=1))
        s.flush()
        raise RuntimeError("half way")

    with pytest.raises(RuntimeError, match="half way"):
        store.write(work)
    assert row_counts(store) == before


def test_a_mutation_that_raises_leaves_the_entity_unchanged(store, tree: Tree):
    store.create_table(tree.m, tree.c, tree.s, table_of("t"), USER)

    def bad(t):
        t.properties["k"] = "v"
        t.columns = []
        raise errors.IllegalArgument("no")

    with pytest.raises(errors.IllegalArgument):
        store.update_table(tree.m, tree.c, tree.s, "t", bad, USER)
    assert store.get_table(tree.m, tree.c, tree.s, "t") == store.get_table(tree.m, tree.c, tree.s, "t")
    loaded = store.get_table(tree.m, tree.c, tree.s, "t")
    assert (loaded.properties, loaded.columns, loaded.version) == ({}, table_of("t").columns, 1)


def test_a_conflict_in_a_later_step_rolls_back_the_earlier_ones(store, tree: Tree):
    """A rename that also changes columns: the unique-name failure must undo nothing half-done."""
    for t in ("t1", "t2"):
        store.create_table(tree.m, tree.c, tree.s, table_of(t), USER)

    def rename_and_add(t):
        t.name, t.properties = "t2", {"k": "v"}
        return t

    with pytest.raises(errors.TableAlreadyExists):
        store.update_table(tree.m, tree.c, tree.s, "t1", rename_and_add, USER)
    loaded = store.get_table(tree.m, tree.c, tree.s, "t1")
    assert (loaded.properties, loaded.version) == ({}, 1)


def test_a_deadlock_is_retried_even_when_it_hits_inside_a_savepoint(store, db_url, unique):
    """Two writes lock two rows in opposite orders; the database kills one, and `write` runs it again.
    On MySQL the deadlock also drops the savepoint, so its rollback fails with 'SAVEPOINT does not
    exist' (1305); the retry must look through that to the deadlock underneath."""
    if db_url.startswith("sqlite"):
        pytest.skip("SQLite runs one writer at a time (BEGIN IMMEDIATE): two writes cannot deadlock")
    names = [f"a_{unique}", f"b_{unique}"]
    for name in names:
        store.create_metalake(Metalake(name), USER)
    both_hold_one = threading.Barrier(2, timeout=10)
    attempts = Counter()

    def cross(first: str, second: str) -> None:
        def work(s):
            attempts[first] += 1
            s.execute(update(MetalakeRow).where(MetalakeRow.name == first).values(comment=first))
            if attempts[first] == 1:
                both_hold_one.wait()
            with s.begin_nested():
                s.execute(update(MetalakeRow).where(MetalakeRow.name == second).values(comment=first))

        store.write(work)

    failures: list[BaseException] = []
    threads = [
        threading.Thread(target=lambda a=a, b=b: _record(failures, cross, a, b)) for a, b in (names, names[::-1])
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not failures, failures
    assert sorted(attempts.values()) == [1, 2]  # exactly one of them was the deadlock victim and ran again


def test_a_deadlock_that_outlasts_the_retries_is_busy_not_a_driver_error(store, db_url, unique):
    """With no retries left, the deadlock's victim answers ScopeBusy (503, "nothing was changed"), never
    the driver's error as it is (which the API could only answer with a 500); the other write lands."""
    if db_url.startswith("sqlite"):
        pytest.skip("SQLite runs one writer at a time (BEGIN IMMEDIATE): two writes cannot deadlock")
    names = [f"a_{unique}", f"b_{unique}"]
    for name in names:
        store.create_metalake(Metalake(name), USER)
    store.max_retries = 0
    both_hold_one = threading.Barrier(2, timeout=10)

    def cross(first: str, second: str) -> None:
        def work(s):
            s.execute(update(MetalakeRow).where(MetalakeRow.name == first).values(comment=first))
            both_hold_one.wait()
            s.execute(update(MetalakeRow).where(MetalakeRow.name == second).values(comment=first))

        store.write(work)

    failures: list[BaseException] = []
    threads = [threading.Thread(target=lambda a=a, b=b: _record(failures, cross, a, b)) for a, b in (names, names[::-1])]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(failures) == 1 and isinstance(failures[0], errors.ScopeBusy), failures
    assert "nothing was changed" in failures[0].message and failures[0].detail
    comments = {store.get_metalake(n).comment for n in names}
    assert len(comments) == 1 and comments <= set(names), comments  # the survivor wrote both rows, the victim none


def _record(failures: list[BaseException], fn, *args) -> None:
    try:
        fn(*args)
    except BaseException as exc:
        failures.append(exc)


def test_a_row_lock_wait_that_runs_out_is_busy_and_its_detail_names_the_wait(store, db_url, unique):
    """A bounded row-lock wait that runs out answers ScopeBusy ("nothing was changed"), and the error's
    detail, which only the server log gets, carries the database's own words and the statement that
    waited: a log then tells a lock wait from a statement that ran past its time, and names the row."""
    if db_url.startswith("sqlite"):
        pytest.skip("SQLite has no row locks: its writers wait on busy_timeout")
    name = f"held_{unique}"
    store.create_metalake(Metalake(name), USER)
    short_wait = ("SET LOCAL lock_timeout = '200ms'" if db_url.startswith("postgresql")
                  else "SET SESSION innodb_lock_wait_timeout = 1")
    with store.engine.connect() as holder, holder.begin():
        holder.execute(select(MetalakeRow.id).where(MetalakeRow.name == name).with_for_update())

        def work(s):
            s.execute(text(short_wait))
            s.execute(update(MetalakeRow).where(MetalakeRow.name == name).values(comment="waited"))

        with pytest.raises(errors.ScopeBusy, match="nothing was changed") as refused:
            store.write(work)
    detail = refused.value.detail or ""
    assert ("lock timeout" in detail or "Lock wait timeout" in detail) and "UPDATE gm_metalake" in detail, detail
    assert store.get_metalake(name).comment is None
