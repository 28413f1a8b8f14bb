"""Failpoints (gravimeta/failpoints.py) act across processes exactly as armed, and only then."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from gravimeta import errors, failpoints
from tests.support.failpoints import Failpoints

REPO = Path(__file__).resolve().parents[2]
_CHILD = """
import sys, time
from gravimeta import failpoints
failpoints.configure()
print("before", flush=True)
try:
    failpoints.hit("store.before_commit", scope="/m/c")
except Exception as exc:
    print("raised", type(exc).__name__, flush=True)
    sys.exit(0)
print("after", flush=True)
"""


def _child(fp: Failpoints, tag: str) -> subprocess.Popen[str]:
    env = {**_base_env(), **fp.env(tag)}
    return subprocess.Popen([sys.executable, "-c", _CHILD], cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)


def _base_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("GRAVIMETA_FAILPOINT")}


@pytest.fixture
def fp(tmp_path):
    points = Failpoints(tmp_path / "fp")
    yield points
    points.clear()


@pytest.fixture(autouse=True)
def _off_afterwards():
    yield
    failpoints.configure(directory="", tag="")


def test_an_unarmed_point_lets_the_process_through(fp):
    child = _child(fp, "a")
    out, _ = child.communicate(timeout=30)
    assert out.split() == ["before", "after"]


def test_a_paused_process_waits_until_the_test_resumes_it(fp):
    fp.arm("store.before_commit", tag="a")
    child = _child(fp, "a")
    reached = fp.wait_reached("store.before_commit", tag="a")
    assert reached.pid == child.pid and reached.context["scope"] == "/m/c"
    assert child.poll() is None and fp.is_paused(reached)
    fp.resume(reached)
    out, _ = child.communicate(timeout=30)
    assert out.split() == ["before", "after"]


def test_a_tagged_arming_leaves_other_processes_alone(fp):
    fp.arm("store.before_commit", "fail", tag="a")
    out, _ = _child(fp, "b").communicate(timeout=30)
    assert out.split() == ["before", "after"]
    out, _ = _child(fp, "a").communicate(timeout=30)
    assert out.split() == ["before", "raised", "FailpointError"]


def test_once_acts_on_the_first_hit_only(fp, tmp_path):
    fp.arm("store.before_commit", "fail", once=True)
    outputs = [_child(fp, "a").communicate(timeout=30)[0].split() for _ in range(2)]
    assert outputs == [["before", "raised", "FailpointError"], ["before", "after"]]


def test_a_scoped_arming_acts_only_on_hits_under_its_scope_and_keeps_its_once_until_then(tmp_path):
    fp = Failpoints(tmp_path / "fp")
    failpoints.configure(directory=str(fp.dir), tag="")
    fp.arm("engine.before_call", "raise ScopeBusy", once=True, scope="/mb/")
    failpoints.hit("engine.before_call", scope="/ma/c0/s1")  # another metalake: let through
    failpoints.hit("engine.before_call", scope="/mbx/c0")  # a prefix of the name is not the metalake
    failpoints.hit("engine.before_call")  # no scope at all: let through
    with pytest.raises(errors.ScopeBusy, match="failpoint engine.before_call"):
        failpoints.hit("engine.before_call", scope="/mb/c0/s1")
    failpoints.hit("engine.before_call", scope="/mb/c0/s1")  # once: taken by the first matching hit


def test_raise_names_a_domain_error(tmp_path):
    fp = Failpoints(tmp_path / "fp")
    failpoints.configure(directory=str(fp.dir), tag="")
    fp.arm("engine.before_call", "raise ConnectionFailed", once=False)
    with pytest.raises(errors.ConnectionFailed, match="failpoint engine.before_call"):
        failpoints.hit("engine.before_call")


def test_a_noting_arming_records_each_hit_of_its_tag_and_lets_it_through(fp):
    fp.arm("store.before_commit", "note", once=False)
    outputs = [_child(fp, tag).communicate(timeout=30)[0].split() for tag in ("a", "a", "b")]
    assert outputs == [["before", "after"]] * 3
    noted = fp.notes("store.before_commit", "a")
    assert [n["scope"] for n in noted] == ["/m/c", "/m/c"] and noted[0]["at"] < noted[1]["at"]
    assert [n["tag"] for n in fp.notes("store.before_commit", "b")] == ["b"]


def test_off_by_default_and_unknown_names_are_refused_when_on(tmp_path):
    failpoints.configure(directory="", tag="")
    failpoints.hit("no.such.point")  # off: not even looked at
    failpoints.configure(directory=str(tmp_path), tag="")
    with pytest.raises(KeyError):
        failpoints.hit("no.such.point")


def test_the_source_hits_only_listed_failpoints():
    hits = set()
    for path in [*REPO.glob("gravimeta/**/*.py"), *REPO.glob("connectors/**/*.py")]:
        hits.update(re.findall(r"failpoints\.hit\(\s*[\"']([^\"']+)[\"']", path.read_text()))
    assert hits <= set(failpoints.FAILPOINTS), sorted(hits - set(failpoints.FAILPOINTS))


def test_the_store_guard_points_report_the_scope_of_the_claim_whose_guard_runs(tmp_path):
    from sqlalchemy import create_engine

    from gravimeta.concurrency.coordinator import Coordinator
    from gravimeta.concurrency.tree_lock import TreeLock
    from gravimeta.entities import NameIdentifier
    from gravimeta.store import EntityStore, guard

    class Claim:  # a lease-like claim whose guard checks nothing
        one_transaction, fence, path = False, 1, "/m/c/s"

        def fence_guard(self):
            return lambda session: None

        def release(self):
            pass

    class Claims:
        def claim(self, scope):
            return Claim()

    fp = Failpoints(tmp_path / "fp")
    failpoints.configure(directory=str(fp.dir), tag="")
    store, coordinator = EntityStore(create_engine("sqlite://")), Coordinator(TreeLock(), Claims())
    for point in ("guard.after_lock", "store.before_commit"):
        fp.arm(point, "raise ScopeBusy", once=False, scope="/m/c/")
        with coordinator.structural(NameIdentifier.of("m", "c", "s")):
            with pytest.raises(errors.ScopeBusy, match=point):
                store.write(lambda s: None)
            with guard.installed(lambda s: None):  # a guard that wraps the claim's keeps its scope
                with pytest.raises(errors.ScopeBusy, match=point):
                    store.write(lambda s: None)
        fp.arm(point, "raise ScopeBusy", once=False, scope="/other/")
        with coordinator.structural(NameIdentifier.of("m", "c", "s")):
            store.write(lambda s: None)  # a claim elsewhere: let through
        fp.disarm(point)
