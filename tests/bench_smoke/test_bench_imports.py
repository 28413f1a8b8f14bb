"""The bench/ scripts are not run by the test suite (each needs minutes and real servers), but each
must at least import cleanly and expose a main() that takes an argv list."""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
LIBRARIES = {"benchlib", "wrklib"}
SCRIPTS = sorted(p.stem for p in BENCH.glob("*.py") if p.stem not in LIBRARIES)


@pytest.fixture(autouse=True)
def bench_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))


def test_there_is_a_script_per_measurement():
    assert {"claim_overhead", "db_limit", "hot_parent", "reads", "growth", "recovery", "ceiling", "bare_stack",
            "same_sql", "profile_requests"} <= set(SCRIPTS)


@pytest.mark.parametrize("name", SCRIPTS)
def test_each_bench_script_imports_and_has_a_main(name):
    module = importlib.import_module(name)
    assert callable(module.main)
    assert module.__doc__ and f"bench/{name}.py" in module.__doc__  # says how to run it
    if name != "claim_cost":
        assert "argv" in inspect.signature(module.main).parameters
    sys.modules.pop(name, None)
