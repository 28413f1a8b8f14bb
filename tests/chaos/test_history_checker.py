"""The history checker itself, on hand-made histories: a clean history passes, and one violation of
each kind is found (duplicate, orphan, divergence, lost write)."""

from __future__ import annotations

from gravimeta.demo.history import CatalogState, History, Op, check

C = "cat"


def op(kind: str, schema: str, table: str | None = None, start: float = 0.0, end: float = 1.0, status: int = 200,
       body: dict | None = None, **kw) -> Op:
    return Op(0, kind, C, schema, table, start=start, end=end, status=status, body=body or {}, **kw)


def state(api: dict[str, list[str]], engine: dict[str, list[str]] | None = None, **kw) -> dict[str, CatalogState]:
    cat = CatalogState("sqlite", api=api, api_schema_listing=list(api), sql={k: list(v) for k, v in api.items()},
                       sql_schema_rows=list(api), engine=engine if engine is not None else {k: list(v) for k, v in api.items()})
    for key, value in kw.items():
        setattr(cat, key, value)
    return {C: cat}


def kinds(report) -> list[str]:
    return sorted(v.kind for v in report.violations)


def test_a_clean_history_passes():
    history = History.from_ops([
        op("create_schema", "s", start=0, end=1),
        op("create_table", "s", "t", start=1, end=2),
        op("create_table", "s", "u", start=2, end=3),
        op("rename_table", "s", "u", start=3, end=4, new_schema="s", new_name="v"),
        op("create_table", "s", "x", start=4, end=5),
        op("drop_table", "s", "x", start=5, end=6, body={"dropped": True}),
        op("create_table", "s", "t", start=6, end=7, status=409, body={"type": "TableAlreadyExistsException"}),
    ])
    report = check(history, state({"s": ["t", "v"]}))
    assert report.ok, report.render()
    assert report.outcomes["ok"] == 6 and report.outcomes["failed"] == 1


def test_a_concurrent_drop_explains_a_missing_create_but_an_earlier_one_does_not():
    create = op("create_table", "s", "t", start=5, end=6)
    concurrent_drop = op("drop_table", "s", "t", start=4, end=5.5, body={"dropped": True})
    assert check([create, concurrent_drop], state({"s": []})).ok
    earlier_drop = op("drop_table", "s", "t", start=1, end=2, body={"dropped": True})
    assert kinds(check([create, earlier_drop], state({"s": []}))) == ["lost-write"]


def test_a_lost_acknowledged_rename_is_found_and_uncertain_ops_do_not_excuse_it():
    rename = op("rename_table", "s", "t", start=1, end=2, new_schema="s2", new_name="t2")
    uncertain_drop = op("drop_table", "s2", "t2", start=3, end=4, status=502, body={"type": "ConnectionFailedException"})
    report = check([rename, uncertain_drop], state({"s": [], "s2": []}))
    assert kinds(report) == ["lost-write"]
    assert "only uncertain ops might explain it" in report.violations[0].detail


def test_a_dropped_with_false_answer_explains_nothing():
    create = op("create_table", "s", "t", start=1, end=2)
    noop_drop = op("drop_table", "s", "t", start=3, end=4, body={"dropped": False})
    assert kinds(check([create, noop_drop], state({"s": []}))) == ["lost-write"]


def test_a_cascade_drop_of_the_schema_explains_its_tables():
    history = [op("create_table", "s", "t", start=1, end=2), op("drop_schema", "s", start=3, end=4, cascade=True,
                                                               body={"dropped": True})]
    assert check(history, state({})).ok


def test_a_name_listed_twice_is_a_duplicate():
    report = check([], state({"s": ["t", "t"]}))
    assert "duplicate" in kinds(report)


def test_two_acknowledged_creates_of_one_name_are_a_duplicate_unless_a_drop_lies_between():
    first, second = op("create_table", "s", "t", start=1, end=3), op("create_table", "s", "t", start=2, end=4)
    assert kinds(check([first, second], state({"s": ["t"]}))) == ["duplicate"]
    later = op("create_table", "s", "t", start=6, end=7)
    drop = op("drop_table", "s", "t", start=4, end=5, body={"dropped": True})
    assert check([first, drop, later], state({"s": ["t"]})).ok
    # the second create may finish first: a drop after it and before the slow first one explains both
    slow, fast = op("create_table", "s", "t", start=1, end=9), op("create_table", "s", "t", start=2, end=3)
    drop_between = op("drop_table", "s", "t", start=5, end=6, body={"dropped": True})
    assert check([slow, fast, drop_between], state({"s": ["t"]})).ok


def test_a_table_row_without_its_schema_is_an_orphan():
    report = check([], state({"s": []}, sql_orphans=["t (schema_id 7)"]))
    assert kinds(report) == ["orphan"]
    mismatch = check([], state({"s": ["t"]}, sql={"s": []}))
    assert kinds(mismatch) == ["orphan"]


def test_engine_and_store_that_differ_are_a_divergence():
    report = check([], state({"s": ["t"]}, engine={"s": ["t", "ghost"], "gone": []}))
    assert kinds(report) == ["divergence", "divergence"]
    details = " ".join(v.detail for v in report.violations)
    assert "ghost" in details and "gone" in details


def test_a_catalog_without_an_external_engine_is_skipped_with_a_note():
    cat = state({"s": ["t"]})
    cat[C].engine, cat[C].engine_note = None, "memory connector"
    report = check([], cat)
    assert report.ok and report.notes == [f"{C}: connector/store comparison skipped (memory connector)"]


def test_outcomes_classify_definite_and_uncertain_failures():
    assert op("create_table", "s", "t", status=503, body={"type": "ScopeBusyException"}).outcome == "failed"
    assert op("create_table", "s", "t", status=409, body={"type": "FenceLostException"}).outcome == "failed"
    assert op("create_table", "s", "t", status=503, body={"type": "RuntimeException"}).outcome == "uncertain"
    assert op("create_table", "s", "t", status=502).outcome == "uncertain"
    no_answer = op("create_table", "s", "t")
    no_answer.status = None
    assert no_answer.outcome == "uncertain"


def test_an_uncertain_removal_explains_a_missing_result_only_when_uncertain_ops_may_apply():
    create = op("create_table", "s", "t", start=1, end=2)
    killed_drop = op("drop_table", "s", "t", start=3, end=4, status=None, error="ConnectionResetError")
    assert kinds(check([create, killed_drop], state({"s": []}))) == ["lost-write"]
    assert check([create, killed_drop], state({"s": []}), uncertain_may_apply=True).ok
    # it still has to fit in time: an uncertain drop over before the create started explains nothing
    early = op("drop_table", "s", "t", start=0, end=0.5, status=None, error="ConnectionResetError")
    assert kinds(check([create, early], state({"s": []}), uncertain_may_apply=True)) == ["lost-write"]
    # and between two acknowledged creates of one name
    first, second = op("create_table", "s", "t", start=1, end=2), op("create_table", "s", "t", start=5, end=6)
    between = op("drop_table", "s", "t", start=3, end=4, status=502, body={"type": "ConnectionFailedException"})
    assert kinds(check([first, between, second], state({"s": ["t"]}))) == ["duplicate"]
    assert check([first, between, second], state({"s": ["t"]}), uncertain_may_apply=True).ok
