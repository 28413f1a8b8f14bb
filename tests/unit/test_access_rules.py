"""Gravitino's authorization rules over hand-made facts (gravimeta/access/rules.py): inheritance down
the tree, a deny anywhere winning, the owner alternatives, and CAN_SET_OWNER's nearest owner."""

from __future__ import annotations

from gravimeta.access import rules
from gravimeta.access.facts import CATALOG, METALAKE, SCHEMA, TABLE, USER, Facts, Level


def facts(owners: dict[str, str] | None = None, allow: dict[str, set[str]] | None = None,
          deny: dict[str, set[str]] | None = None, chain: tuple[str, ...] = (TABLE, SCHEMA, CATALOG)) -> Facts:
    """bob's facts about m.c.s.t: `owners` names the owner of a level, `allow`/`deny` its privileges."""
    owners, allow, deny = owners or {}, allow or {}, deny or {}
    levels = {kind: Level(kind, kind.lower(), i + 1, (USER, owners[kind]) if kind in owners else None,
                          frozenset(allow.get(kind, ())), frozenset(deny.get(kind, ())))
              for i, kind in enumerate((METALAKE, CATALOG, SCHEMA, TABLE))}
    return Facts("bob", True, levels, chain=chain, target=chain[0])


def test_a_privilege_on_the_metalake_counts_for_a_table_in_it():
    use = {METALAKE: {"USE_CATALOG", "USE_SCHEMA", "SELECT_TABLE"}}
    assert rules.LOAD_TABLE.holds(facts(allow=use))
    assert not rules.LOAD_TABLE.holds(facts(allow={METALAKE: {"USE_CATALOG", "SELECT_TABLE"}}))


def test_a_deny_at_any_level_beats_an_allow_at_any_other():
    use = {METALAKE: {"USE_CATALOG", "USE_SCHEMA"}}
    for allow_at, deny_at in ((TABLE, METALAKE), (METALAKE, TABLE), (SCHEMA, SCHEMA)):
        allow = {**use, allow_at: use.get(allow_at, set()) | {"SELECT_TABLE"}}
        assert rules.LOAD_TABLE.holds(facts(allow=allow))
        assert not rules.LOAD_TABLE.holds(facts(allow=allow, deny={deny_at: {"SELECT_TABLE"}}))


def test_the_owner_of_the_catalog_may_do_anything_in_it_and_a_table_owner_needs_use():
    assert rules.DROP_TABLE.holds(facts(owners={CATALOG: "bob"}))
    assert not rules.DROP_TABLE.holds(facts(owners={TABLE: "bob"}))
    assert rules.DROP_TABLE.holds(facts(owners={TABLE: "bob"}, allow={CATALOG: {"USE_CATALOG", "USE_SCHEMA"}}))
    assert not rules.DROP_TABLE.holds(facts(owners={TABLE: "alice"}, allow={CATALOG: {"USE_CATALOG", "USE_SCHEMA"}}))


def test_can_set_owner_is_decided_by_the_nearest_owned_level():
    assert rules.CAN_SET_OWNER.holds(facts(owners={METALAKE: "bob"}))
    assert rules.CAN_SET_OWNER.holds(facts(owners={CATALOG: "bob"}))
    # bob owns the table too: the table decides, and a table's owner needs USE_SCHEMA
    assert not rules.CAN_SET_OWNER.holds(facts(owners={CATALOG: "bob", TABLE: "bob"}))
    assert rules.CAN_SET_OWNER.holds(facts(owners={TABLE: "bob"}, allow={SCHEMA: {"USE_SCHEMA"}}))
    assert rules.CAN_OPERATE_PRIVILEGES.holds(facts(allow={SCHEMA: {"MANAGE_GRANTS"}}))


def test_a_missing_object_is_owned_by_nobody_and_holds_no_privilege():
    gone = facts(owners={TABLE: "bob"}, allow={TABLE: {"SELECT_TABLE"}})
    gone = gone.with_level(Level(TABLE, "t"))  # no id: the table does not exist
    assert not gone.owns(TABLE) and not gone.allows(TABLE, "SELECT_TABLE")


def test_rules_read_as_gravitinos_expressions():
    assert str(rules.ALTER_SCHEMA) == "ANY(OWNER, METALAKE, CATALOG) || SCHEMA_OWNER_WITH_USE_CATALOG"
    assert str(rules.LOAD_SCHEMA) == "ANY(OWNER, METALAKE, CATALOG) || ANY_USE_CATALOG && (SCHEMA::OWNER || ANY_USE_SCHEMA)"
