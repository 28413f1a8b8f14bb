"""Gravitino's authorization rules over hand-made facts (gravimeta/access/rules.py): inheritance down
the tree, a deny anywhere winning, the owner alternatives, and CAN_SET_OWNER's nearest owner; and the
rules decided for many items at once (a list) decide each item as they would alone."""

from __future__ import annotations

import random
from dataclasses import replace

from gravimeta.access import rules
from gravimeta.access.facts import (
    CATALOG,
    COLUMN,
    METALAKE,
    ROLE,
    SCHEMA,
    TABLE,
    TAG,
    USER,
    Facts,
    Level,
    Standings,
)


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


def random_facts(rng: random.Random) -> Facts:
    """bob's facts with random levels: some missing, owned by bob, alice, a group of bob's name or
    nobody, random privileges allowed and denied, a role held or not, a random target and subject."""
    owners = [(USER, "bob"), (USER, "alice"), ("GROUP", "bob"), None]
    levels = {}
    for i, kind in enumerate((METALAKE, CATALOG, SCHEMA, TABLE, TAG, ROLE)):
        levels[kind] = Level(kind, f"{kind.lower()}{rng.randrange(3)}", None if rng.random() < 0.1 else i + 1,
                             rng.choice(owners), frozenset(rng.sample(PRIVILEGES, rng.randrange(4))),
                             frozenset(rng.sample(PRIVILEGES, rng.randrange(2))), rng.random() < 0.5)
    chains = [(METALAKE,), (CATALOG,), (SCHEMA, CATALOG), (TABLE, SCHEMA, CATALOG), (COLUMN, TABLE, SCHEMA, CATALOG),
              (TAG,), (ROLE,), ("FILESET", SCHEMA, CATALOG), ("POLICY",)]
    chain = rng.choice(chains)
    return Facts("bob", rng.random() < 0.9, levels, principal=7, target=chain[0], chain=chain,
                 subject=rng.choice(["bob", "alice", None]))


PRIVILEGES = ["USE_CATALOG", "USE_SCHEMA", "CREATE_SCHEMA", "CREATE_TABLE", "SELECT_TABLE", "MODIFY_TABLE",
              "APPLY_TAG", "MANAGE_GRANTS", "MANAGE_USERS", "MANAGE_GROUPS", "CREATE_ROLE", "CREATE_TAG",
              "CREATE_CATALOG"]
EVERY_RULE = [value for value in vars(rules).values() if isinstance(value, rules.Rule)]


def test_every_rule_decides_alike_on_levels_and_their_standings():
    """Lists are decided once per distinct standing (a level without its name and id, its owner kept
    only when it is the caller): that is exact only if no rule reads more of a level than that."""
    rng = random.Random(20261212)
    assert len(EVERY_RULE) > 30
    for _ in range(3000):
        facts = random_facts(rng)
        standing = replace(facts, levels={k: level.standing("bob") for k, level in facts.levels.items()})
        for rule in EVERY_RULE:
            assert rule.holds(standing) == rule.holds(facts), (str(rule), facts)


def test_a_rule_decided_for_many_items_at_once_decides_each_as_alone():
    rng = random.Random(5)
    many = [random_facts(rng) for _ in range(400)]
    for rule in EVERY_RULE:
        assert rules.each_holds(rule, many) == [rule.holds(f) for f in many], str(rule)
        base = many[0]
        levels = {str(i): f.levels[TABLE].standing("bob") for i, f in enumerate(many)}
        for usual in (levels["0"], Level(TABLE, "")):
            passes, unusual = rules.exceptions(rule, base, Standings(usual, levels))
            assert passes == rule.holds(base.with_level(usual)), str(rule)
            assert {k for k in levels if (k in unusual) != passes} == {
                k for k, level in levels.items() if rule.holds(base.with_level(level))}, str(rule)
