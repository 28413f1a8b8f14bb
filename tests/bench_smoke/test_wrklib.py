"""bench/wrklib.py reads what the Lua scripts print and merges runs against several replicas (no wrk
needed here: the output is written out by hand, in the shape bench/wrk/report.lua prints)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def wrklib():
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(BENCH))
        yield importlib.import_module("wrklib")


def wrk_stdout(requests: int, statuses: dict[str, dict[str, int]], p50_us: int = 2000) -> str:
    report = {"requests": requests, "duration_us": 2_000_000,
              "errors": {"connect": 0, "read": 0, "write": 0, "status": 0, "timeout": 1},
              "latency_us": {"p50": p50_us, "p90": 3000, "p99": 9000, "max": 12000, "mean": 2500.5},
              "statuses": statuses, "error_samples": []}
    return "Running 2s test @ http://127.0.0.1:1/\n...\nWRK_JSON " + json.dumps(report) + "\n"


def test_a_run_reads_throughput_errors_and_the_histogram(wrklib):
    result = wrklib.parse_output(wrk_stdout(400, {"create": {"200": 199, "409": 1}, "drop": {"200": 200}}),
                                 json.dumps({"create": [1000, 3000], "drop": [2000]}))
    assert result.throughput == 200
    assert result.errors == 2  # the 409 and wrk's timeout
    assert result.p(0.5) == 0.002 and result.p(0.99) == 0.009  # wrk's histogram, in seconds
    assert result.p(1.0, "create") == 0.003  # the script's samples of one kind


def test_empty_lua_tables_arrive_as_lists_and_read_as_nothing(wrklib):
    result = wrklib.parse_output(wrk_stdout(0, []), "[]")  # type: ignore[arg-type]
    assert result.kinds == {} and result.statuses == {} and result.errors == 1


def test_a_run_without_the_report_line_is_an_error(wrklib):
    with pytest.raises(RuntimeError, match="WRK_JSON"):
        wrklib.parse_output("PANIC: unprotected error in call to Lua API\n", "")


def test_merged_runs_add_up_and_pool_their_samples(wrklib):
    a = wrklib.parse_output(wrk_stdout(100, {"create": {"200": 100}}), json.dumps({"create": [1000] * 100}))
    b = wrklib.parse_output(wrk_stdout(300, {"create": {"200": 299, "503": 1}}), json.dumps({"create": [5000] * 300}))
    merged = wrklib.merge([a, b])
    assert merged.throughput == 200 and merged.statuses == {"create": {200: 399, 503: 1}}
    assert not merged.histogram  # wrk's histograms cannot be merged: percentiles come from the samples
    assert merged.p(0.5) == 0.005 and merged.p(0.1) == 0.001


def test_connections_spread_round_robin_over_replicas(wrklib):
    assert wrklib.spread(["a", "b", "c"], 8) == [("a", 3), ("b", 3), ("c", 2)]
    assert wrklib.spread(["a", "b", "c"], 2) == [("a", 1), ("b", 1)]


def test_without_wrk_the_bench_says_how_to_install_it(wrklib, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SystemExit, match="bench/setup"):
        wrklib.wrk_binary()
