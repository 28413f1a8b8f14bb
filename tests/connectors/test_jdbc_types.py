"""Gravitino 1.3's type and default mappings of its PostgreSQL and MySQL catalogs (PostgreSqlTypeConverter,
MysqlTypeConverter and the column default converters), on the real servers: what gravimeta writes reads
back as Gravitino would report it, what an engine holds (made outside gravimeta) is described as
Gravitino describes it, and what the engine cannot hold is refused before anything is sent."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from connectors.jdbc import defaults
from gravimeta import errors
from gravimeta.entities import Column, Schema, Table
from tests.support import jdbc


def lit(data_type, value):
    return {"type": "literal", "dataType": data_type, "value": value}


def ext(name):
    return {"type": "external", "catalogString": name}


def lst(element):
    return {"type": "list", "elementType": element, "containsNull": False}


NULL = defaults.NULL_LITERAL
NOW = defaults.CURRENT_TIMESTAMP

#: Gravitino type -> how the engine reads it back
PG_TYPES = {
    "boolean": "boolean", "short": "short", "integer": "integer", "long": "long", "float": "float",
    "double": "double", "string": "string", "date": "date", "time": "time(6)", "time(3)": "time(3)",
    "timestamp": "timestamp(6)", "timestamp(3)": "timestamp(3)", "timestamp_tz": "timestamp_tz(6)",
    "timestamp_tz(0)": "timestamp_tz(0)", "decimal(10,2)": "decimal(10,2)", "varchar(12)": "varchar(12)",
    "char(3)": "char(3)", "binary": "binary", "uuid": "uuid",
}
PG_COMPLEX = [(lst("integer"), lst("integer")), (lst("varchar(5)"), lst("string")),
              (lst("timestamp(3)"), lst("timestamp")), (ext("jsonb"), ext("jsonb")), (ext("int8"), "long")]
MY_TYPES = {
    "byte": "byte", "byte unsigned": "byte unsigned", "short": "short", "short unsigned": "short unsigned",
    "integer": "integer", "integer unsigned": "integer unsigned", "long": "long", "long unsigned": "long unsigned",
    "float": "float", "double": "double", "string": "string", "date": "date", "time": "time(0)", "time(3)": "time(3)",
    "timestamp": "timestamp(0)", "timestamp(6)": "timestamp(6)", "timestamp_tz": "timestamp_tz(0)",
    "timestamp_tz(3)": "timestamp_tz(3)", "decimal(10,2)": "decimal(10,2)", "varchar(12)": "varchar(12)",
    "char(3)": "char(3)", "binary": "binary", "boolean": "boolean",
}
MY_COMPLEX = [(ext("MEDIUMINT"), ext("MEDIUMINT")), (ext("varbinary(8)"), ext("VARBINARY"))]
REFUSED = {
    "jdbc_postgresql": ["byte", "integer unsigned", "fixed(4)", "interval_day", "null", "variant",
                        {"type": "map", "keyType": "string", "valueType": "long", "valueContainsNull": True},
                        {"type": "list", "elementType": "string", "containsNull": True},
                        lst(lst("integer")), {"type": "unparsed", "unparsedType": "int"}, ext("int); DROP TABLE x; --")],
    "jdbc_mysql": ["uuid", "fixed(4)", "interval_year", "null", lst("integer"),
                   {"type": "struct", "fields": [{"name": "a", "type": "integer", "nullable": True}]},
                   {"type": "unparsed", "unparsedType": "int"}, ext("int) ENGINE=x; --")],
}


@pytest.fixture(params=["jdbc_postgresql", "jdbc_mysql"])
def provider(request):
    return request.param


@pytest.fixture
def engine(request, provider):
    return request.getfixturevalue(f"{provider}_connector")


def expected_types(provider):
    simple = PG_TYPES if provider == "jdbc_postgresql" else MY_TYPES
    return list(simple.items()) + (PG_COMPLEX if provider == "jdbc_postgresql" else MY_COMPLEX)


def test_every_mapped_type_reads_back_as_gravitino_reports_it(provider, engine, name):
    schema = name("types")
    engine.create_schema(Schema(schema))
    pairs = expected_types(provider)
    table = Table("every_type", [Column(f"c{i}", written) for i, (written, _) in enumerate(pairs)])
    engine.create_table(schema, table)
    loaded = engine.load_table(schema, "every_type")
    assert [c.type for c in loaded.columns] == [read for _, read in pairs]
    assert [c.type for c in engine.as_described(table).columns] == [read for _, read in pairs]  # what the repair compares
    engine.create_table(schema, table)  # the same definition again: accepted, as the engine describes it so


def test_a_type_the_engine_cannot_hold_is_refused_before_anything_is_sent(provider, engine, name):
    """By the create itself; by check_table too (before the intent) unless external, which check_table
    leaves to the call that writes it (an engine-made column's external type is never written again)."""
    schema = name("refused")
    engine.create_schema(Schema(schema))
    for kind in REFUSED[provider]:
        table = Table("t", [Column("id", "integer"), Column("c", kind)])
        with pytest.raises(errors.IllegalArgument) as refused:
            engine.create_table(schema, table)
        assert "Couldn't convert Gravitino type" in refused.value.message or "nullable" in refused.value.message \
            or "multidimensional" in refused.value.message or "does not look like" in refused.value.message
        if not (isinstance(kind, dict) and kind.get("type") == "external"):
            with pytest.raises(errors.IllegalArgument):
                engine.check_table(table)
    assert engine.list_tables(schema) == []


PG_MADE = """CREATE TABLE {s}.made (
    a serial, b bigserial, c jsonb, d int4[], e numeric, f varchar, g timetz, h char(2),
    i timestamp(3) with time zone, j interval, k text DEFAULT 'it''s', l int GENERATED ALWAYS AS IDENTITY,
    m numeric(5,2) DEFAULT 1.5, n timestamp DEFAULT now(), o bool DEFAULT true NOT NULL,
    p varchar(4) DEFAULT NULL, q int8 DEFAULT -3, r date DEFAULT '2021-10-01', s float8 DEFAULT 1e10,
    CONSTRAINT made_pk PRIMARY KEY (l), CONSTRAINT made_uk UNIQUE (h, f))"""
PG_MADE_COMMENTS = ["COMMENT ON TABLE {s}.made IS 'made (From Gravitino, DO NOT EDIT: gravitino.v1.uid1078334182909406185)'",
                    "COMMENT ON COLUMN {s}.made.c IS 'a document'",
                    "CREATE UNIQUE INDEX made_by_q ON {s}.made (q)"]
PG_DESCRIBED = [
    ("a", ext("serial"), False, True, {"type": "unparsed", "unparsedExpression": "nextval('{u}.made_a_seq'::regclass)"}),
    ("b", ext("bigserial"), False, True, {"type": "unparsed", "unparsedExpression": "nextval('{u}.made_b_seq'::regclass)"}),
    ("c", ext("jsonb"), True, False, NULL), ("d", lst("integer"), True, False, NULL),
    ("e", "decimal(38,18)", True, False, NULL), ("f", "varchar(2147483647)", True, False, NULL),
    ("g", ext("timetz"), True, False, NULL), ("h", "char(2)", True, False, NULL),
    ("i", "timestamp_tz(3)", True, False, NULL), ("j", ext("interval"), True, False, NULL),
    ("k", "string", True, False, lit("string", "it's")), ("l", "integer", False, True, None),
    ("m", "decimal(5,2)", True, False, lit("decimal(5,2)", "1.50")),
    ("n", "timestamp(6)", True, False, {"type": "unparsed", "unparsedExpression": "now()"}),
    ("o", "boolean", False, False, lit("boolean", "true")), ("p", "varchar(4)", True, False, NULL),
    ("q", "long", True, False, lit("long", "-3")), ("r", "date", True, False, lit("date", "2021-10-01")),
    ("s", "double", True, False, lit("double", "1.0E10")),
]
MY_MADE = """CREATE TABLE {s}.made (
    a mediumint unsigned, b enum('x','y'), c bit(8), d year, e double DEFAULT 2, f varchar(7) DEFAULT 'a''b',
    g datetime(2) DEFAULT current_timestamp(2), h int DEFAULT (1 + 2), i decimal(6,3) DEFAULT 1.5, j tinyint(1),
    k longtext, l int NOT NULL AUTO_INCREMENT, m time DEFAULT '12:30:00', n timestamp(3) NULL DEFAULT NULL,
    o bigint unsigned DEFAULT 18446744073709551615, p char(2) NOT NULL,
    PRIMARY KEY (l), UNIQUE KEY made_uk (p, f)) COMMENT 'made (From Gravitino, DO NOT EDIT: gravitino.v1.uid5)'"""
MY_DESCRIBED = [
    ("a", ext("MEDIUMINT UNSIGNED"), True, False, NULL), ("b", ext("ENUM"), True, False, NULL),
    ("c", "binary", True, False, NULL), ("d", ext("YEAR"), True, False, NULL),
    ("e", "double", True, False, lit("double", "2.0")), ("f", "varchar(7)", True, False, lit("varchar(7)", "a'b")),
    ("g", "timestamp(2)", True, False, NOW), ("h", "integer", True, False, {"type": "unparsed", "unparsedExpression": "(1 + 2)"}),
    ("i", "decimal(6,3)", True, False, lit("decimal(6,3)", "1.500")), ("j", "boolean", True, False, NULL),
    ("k", ext("LONGTEXT"), True, False, NULL), ("l", "integer", False, True, None),
    ("m", "time(0)", True, False, lit("time", "12:30")), ("n", "timestamp_tz(3)", True, False, NULL),
    ("o", "long unsigned", True, False, lit("long unsigned", "18446744073709551615")), ("p", "char(2)", False, False, None),
]


def test_a_table_made_outside_gravimeta_is_described_as_gravitino_describes_it(provider, engine, name):
    """Types, nullability, auto-increment, defaults, comments (without Gravitino's id), keys."""
    key = provider.replace("_", "-")
    schema = name("made")
    engine.create_schema(Schema(schema))
    admin = jdbc.admin_engine(key, engine.context.properties)
    quoted = f'"{schema}"' if key == "jdbc-postgresql" else f"`{schema}`"
    try:
        with admin.begin() as conn:
            for statement in [PG_MADE, *PG_MADE_COMMENTS] if key == "jdbc-postgresql" else [MY_MADE]:
                conn.execute(text(statement.format(s=quoted)))
    finally:
        admin.dispose()
    described = engine.load_table(schema, "made")
    rows = PG_DESCRIBED if key == "jdbc-postgresql" else MY_DESCRIBED
    assert [(c.name, c.type, c.nullable, c.auto_increment, c.default_value) for c in described.columns] == [
        (n, t, nullable, auto, _with_schema(d, schema)) for n, t, nullable, auto, d in rows]
    assert described.comment == "made"
    if key == "jdbc-postgresql":
        assert [c.comment for c in described.columns if c.comment] == ["a document"]
        assert described.indexes == [
            {"indexType": "PRIMARY_KEY", "name": "made_pk", "fieldNames": [["l"]]},
            {"indexType": "UNIQUE_KEY", "name": "made_uk", "fieldNames": [["h"], ["f"]]},
            {"indexType": "UNIQUE_KEY", "name": "made_by_q", "fieldNames": [["q"]]}]
        assert described.properties == {}
    else:
        assert described.indexes == [{"indexType": "PRIMARY_KEY", "name": "PRIMARY", "fieldNames": [["l"]]},
                                     {"indexType": "UNIQUE_KEY", "name": "made_uk", "fieldNames": [["p"], ["f"]]}]
        assert described.properties == {"engine": "InnoDB", "auto-increment-offset": "1"}
    assert engine.list_tables(schema) == ["made"]


def test_a_table_made_outside_gravimeta_can_be_altered(provider, engine, name):
    """Its engine-only types and defaults are kept as the engine has them (MySQL writes moved columns
    again from the engine's own declaration); a new default only the engine could write is refused."""
    key = provider.replace("_", "-")
    schema = name("made")
    engine.create_schema(Schema(schema))
    admin = jdbc.admin_engine(key, engine.context.properties)
    quoted = f'"{schema}"' if key == "jdbc-postgresql" else f"`{schema}`"
    made = (f"CREATE TABLE {quoted}.made (a jsonb, h int DEFAULT abs(-3), n timestamp DEFAULT now())"
            if key == "jdbc-postgresql" else MY_MADE.format(s=quoted))
    try:
        with admin.begin() as conn:
            conn.execute(text(made))
    finally:
        admin.dispose()
    before = engine.load_table(schema, "made")
    after = before.working_copy()
    after.columns.append(Column("added", "integer", comment="new"))
    if key == "jdbc-mysql":  # moved: every column is written again
        after.columns.insert(0, after.columns.pop([c.name for c in after.columns].index("h")))
    engine.check_table(after)
    engine.alter_table(schema, before, after)
    found = engine.load_table(schema, "made")
    assert [c.name for c in found.columns] == [c.name for c in after.columns]
    assert found.columns[:-1] == after.columns[:-1]  # types, defaults, comments as the engine had them
    unwritable = after.working_copy()
    unwritable.columns[-1].default_value = {"type": "unparsed", "unparsedExpression": "(select 1)"}
    with pytest.raises(errors.IllegalArgument, match="Not a supported column default value"):
        engine.alter_table(schema, after, unwritable)


def _with_schema(default, schema):
    if isinstance(default, dict) and default.get("type") == "unparsed":
        return {**default, "unparsedExpression": default["unparsedExpression"].replace("{u}", _pg_quoted(schema))}
    return default


def _pg_quoted(schema):
    return schema if schema.islower() and schema.replace("_", "").isalnum() else f'"{schema}"'


DEFAULTS = [  # (type, default written, default read back), on both engines
    ("integer", lit("integer", "42"), lit("integer", "42")),
    ("long", lit("long", "-7"), lit("long", "-7")),
    ("decimal(10,2)", lit("decimal(10,2)", "1.5"), lit("decimal(10,2)", "1.50")),
    ("varchar(10)", lit("varchar(10)", "it's"), lit("varchar(10)", "it's")),
    ("string", lit("string", "back\\slash"), lit("string", "back\\slash")),
    ("date", lit("date", "2021-10-01"), lit("date", "2021-10-01")),
    ("time", lit("time", "12:30:00"), lit("time", "12:30")),
    ("timestamp", lit("timestamp", "2021-10-01T08:00:05"), lit("timestamp", "2021-10-01T08:00:05")),
    ("double", lit("double", "1.5"), lit("double", "1.5")),
    ("float", lit("float", "2"), lit("float", "2.0")),
    ("integer", NULL, NULL),
    ("timestamp", NOW, NOW),
]


def test_defaults_are_written_and_read_back_as_gravitino_reads_them(provider, engine, name):
    schema = name("defaults")
    engine.create_schema(Schema(schema))
    items = list(DEFAULTS)
    if provider == "jdbc_postgresql":
        items.append(("boolean", lit("boolean", "true"), lit("boolean", "true")))
        items.append(("integer", {"type": "function", "funcName": "abs", "funcArgs": [lit("integer", "-4")]},
                      {"type": "unparsed", "unparsedExpression": "abs('-4'::integer)"}))
    table = Table("d", [Column(f"c{i}", kind, default_value=written) for i, (kind, written, _) in enumerate(items)])
    engine.create_table(schema, table)
    assert [c.default_value for c in engine.load_table(schema, "d").columns] == [read for _, _, read in items]


@pytest.mark.parametrize("default", [
    {"type": "unparsed", "unparsedExpression": "0); DROP TABLE x; --"},
    lit("integer", "1; DROP TABLE x"),
    {"type": "function", "funcName": "now(); DROP TABLE x; --", "funcArgs": []},
])
def test_a_default_that_would_be_sql_of_its_own_is_refused(provider, engine, name, default):
    schema = name("inject")
    engine.create_schema(Schema(schema))
    with pytest.raises(errors.IllegalArgument):
        engine.create_table(schema, Table("t", [Column("c", "integer", default_value=default)]))
    assert engine.list_tables(schema) == []


@pytest.mark.parametrize(("value", "single", "java"), [
    (1.5, False, "1.5"), (2.0, True, "2.0"), (1e10, False, "1.0E10"), (0.001, False, "0.001"),
    (1e-4, False, "1.0E-4"), (0.1, True, "0.1"), (123456.78, False, "123456.78"), (1.0e7, True, "1.0E7"),
    (-0.0, False, "-0.0"), (3.4028234663852886e38, True, "3.4028235E38"),
])
def test_floating_point_values_print_as_java_prints_them(value, single, java):
    assert defaults.java_floating(value, single) == java
