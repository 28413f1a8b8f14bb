"""Failpoints: named places in the code where a TEST can pause, delay or fail a process.

A safety test has to reach the window it is about. A failpoint puts a name on a point between two steps
(`failpoints.hit("claim.before_grant")`) so that a test can stop a real process exactly there, let
another process run, and then let the first one go on. Off (the default, and always in service) a hit
costs one truth test of a module global.

Switched on only by the environment variable GRAVIMETA_FAILPOINTS_DIR (read once, by `configure()`,
which create_app and the test child processes call): a directory through which the test and every
process that has it talk with files, so that one test can drive several processes (gunicorn workers
included) without any channel of their own.

  <dir>/<name>            arms the point for every process; its content is the action
  <dir>/<name>@<tag>      arms it only for processes whose GRAVIMETA_FAILPOINT_TAG is <tag>
                          (the tests give each replica or child its own tag)

Actions (the file's first line):
  pause        write <dir>/<name>@<tag>.<pid>.reached (JSON: the hit's context), then wait until
               <dir>/<name>@<tag>.<pid>.resume exists or the arming file (with `once`: the file it
               was renamed to) is removed, at most PAUSE_LIMIT_S (a forgotten pause must not hang a
               test run forever)
  sleep <ms>   sleep that long
  fail         raise FailpointError (an unexpected error, as a bug or a crash mid-step would be)
  raise <Name> raise gravimeta.errors.<Name> with a message naming the failpoint
  exit         os._exit(70): the process dies on the spot, as a kill -9 would leave it
  note         append the hit's context (JSON, one line, with the pid and the monotonic time) to
               <dir>/<name>@<tag>.notes and go on: a test learns what a process did there (the fence
               of each claim an operation ran under) without changing its timing
A second line `once` makes the first process that hits the point take the arming file (an atomic
rename), so exactly one hit acts. A line `scope=<prefix>` limits the arming to hits whose context has a
`scope` (a claim's path, '/m/c/s') starting with <prefix>: a test can stop a process while it holds a
claim in one metalake and let its claims elsewhere go by (a hit with no `scope` never matches; a hit that
does not match neither acts nor takes a `once` arming). tests/support/failpoints.py is the test side.

The names in use are listed in FAILPOINTS below; `hit` refuses any other name (a typo in a test would
otherwise arm a point that is never reached, and the test would pass for the wrong reason).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

ENV_DIR = "GRAVIMETA_FAILPOINTS_DIR"
ENV_TAG = "GRAVIMETA_FAILPOINT_TAG"
PAUSE_LIMIT_S = 120.0
_POLL_S = 0.005

#: every failpoint in the code, with where it sits; tests/unit/test_failpoints.py checks that each is hit
#: somewhere in the source and that the source hits no other.
FAILPOINTS: dict[str, str] = {
    "claim.before_grant": "lease claim: the claim transaction is about to commit its grant",
    "claim.granted": "lease claim: the grant committed and its fence came back, not yet judged fresh or spent",
    "claim.after_grant": "lease claim: granted and committed, before the operation runs",
    "claim.root_waiting": "lease root claim: an attempt found the tree busy and recorded the claim as the waiting "
                          "root claim (new claims are held back), before it backs off",
    "renew.before_commit": "lease renewal: the UPDATE ran, its transaction has not committed",
    "guard.after_lock": "fence guard: the claim row is locked and checked inside the store transaction",
    "advisory.before_lock": "advisory claim: its transaction is open, the advisory locks not yet taken",
    "advisory.after_lock": "advisory claim: the advisory locks are held",
    "store.before_commit": "a guarded store write transaction ran its work and is about to commit",
    "engine.before_call": "journalled operation: the intent is recorded, the engine call not yet sent",
    "engine.after_call": "journalled operation: the engine call returned, the store step not yet run",
    "import.before_store": "engine import: under the parent's claim, the engine described the object, nothing stored yet",
    "repair.before_decide": "journal repair: the engine was observed, the decision not yet applied",
    # edge (sqlite catalog locations, connectors/sqlite/paths.py)
    "catalog.location_busy": "sqlite catalog create/alter: the root's location lock is held by another process",
    "catalog.location_checked": "sqlite catalog create/alter: path checked free under the lock, not yet committed",
    # owners (gravimeta/ownership)
    "owner.after_lock": "set owner: the object's row is locked, the owner not yet looked up or written",
    # authorization (gravimeta/api/door.py)
    "access.after_check": "the door let a request in; its dispatcher has not run (no claim taken yet)",
    "role.after_lock": "role grant or revoke: the role's row (or the roles' and the principal's) locked and the "
                       "object read, nothing written yet",
    "role.after_resolve": "role create or override: its securable objects are resolved (in a snapshot, or "
                          "inside the write with GRAVIMETA_HA_DISABLE=role_resolve_in_write), nothing written",
    # tags, statistics, partitions
    "tags.after_resolve": "tag association: the object's row is read (and locked) in its transaction, "
                          "the association rows not yet written",
    "statistics.before_write": "statistics update: the table row is read (and locked) in its transaction, "
                               "the statistic rows not yet written",
    "partitions.before_engine": "partition add/drop under the table's claim: the store's checks passed, "
                                "the engine call not yet sent",
    # catalog moves and retirements (gravimeta/dispatch/retirement.py, catalogs.py)
    "catalog.before_identity": "catalog create or property change: its engine is about to be asked who it is",
    "retirement.before_ask": "a catalog's first use in a process: its engine is about to be asked who it is",
    "retirement.before_forget": "a pending retirement was delivered to its engine, its record not yet deleted",
    # engine
    "sqlite.before_begin": "sqlite catalog: a mutating call has connected (deadline checked), its transaction not begun",
    "sqlite.schema_unregistered": "sqlite drop schema: the registry row's deletion (and the file's tombstone) "
                                  "committed, the file not yet deleted",
    "sqlite.schema_file_made": "sqlite create schema: the new incarnation's file exists, its registry row not "
                               "yet committed",
    "jdbc.before_begin": "jdbc catalog: a mutating call has its connection (deadline checked), its transaction "
                         "(PostgreSQL) or its named lock (MySQL) not yet begun",
    "jdbc.before_commit": "jdbc-postgresql: a mutating call's transaction checked its fence and ran its DDL, "
                          "not yet committed",
    "jdbc.after_check": "jdbc-mysql: a mutating call holds its named lock and recorded its fence, its DDL not "
                        "yet sent",
    # ops (health, serving)
    "node.before_beat": "node registry heartbeat: about to refresh this process's gm_node row",
}


class FailpointError(RuntimeError):
    """The failure a `fail` action injects."""


_dir: Path | None = None
_tag = ""


def configure(directory: str | None = None, tag: str | None = None) -> None:
    """Read GRAVIMETA_FAILPOINTS_DIR / GRAVIMETA_FAILPOINT_TAG (or take them as arguments). Called once
    per process by create_app and by the test children; without the variable, failpoints stay off."""
    global _dir, _tag
    raw = directory if directory is not None else os.environ.get(ENV_DIR)
    _dir = Path(raw) if raw else None
    _tag = tag if tag is not None else os.environ.get(ENV_TAG, "")


def enabled() -> bool:
    return _dir is not None


def hit(name: str, **context: Any) -> None:
    """Mark that this process reached failpoint `name`; act if a test armed it (see the module docstring)."""
    if _dir is None:
        return
    if name not in FAILPOINTS:
        raise KeyError(f"unknown failpoint {name!r}; add it to gravimeta.failpoints.FAILPOINTS")
    _act(_dir, name, context)


def _act(directory: Path, name: str, context: dict[str, Any]) -> None:
    armed = _armed_file(directory, name)
    if armed is None:
        return
    try:
        lines = armed.read_text().split()
    except FileNotFoundError:  # disarmed (or taken by another process) between the look and the read
        return
    prefixes = [word[len("scope="):] for word in lines[1:] if word.startswith("scope=")]
    if prefixes and not any(str(context.get("scope", "")).startswith(prefix) for prefix in prefixes):
        return
    if "once" in lines[1:]:
        taken = armed.with_name(f"{armed.name}.taken.{os.getpid()}")
        try:
            os.rename(armed, taken)
        except FileNotFoundError:
            return  # another process took it first
        armed = taken
    action, args = (lines[0], lines[1:]) if lines else ("pause", [])
    if action == "pause":
        _pause(directory, name, armed, context)
    elif action == "sleep":
        time.sleep(int(args[0]) / 1000)
    elif action == "fail":
        raise FailpointError(f"failpoint {name} failed this step")
    elif action == "raise":
        from gravimeta import errors

        raise getattr(errors, args[0])(f"failpoint {name} raised {args[0]}")
    elif action == "exit":
        os._exit(70)
    elif action == "note":
        _note(directory, name, context)
    else:
        raise ValueError(f"failpoint {name}: unknown action {action!r}")


def _armed_file(directory: Path, name: str) -> Path | None:
    for candidate in ((directory / f"{name}@{_tag}") if _tag else None, directory / name):
        if candidate is not None and candidate.exists():
            return candidate
    return None


def _pause(directory: Path, name: str, armed: Path, context: dict[str, Any]) -> None:
    stem = f"{name}@{_tag}.{os.getpid()}"
    reached, resume = directory / f"{stem}.reached", directory / f"{stem}.resume"
    tmp = directory / f".{stem}.tmp"
    tmp.write_text(json.dumps({"pid": os.getpid(), "tag": _tag, **{k: str(v) for k, v in context.items()}}))
    os.replace(tmp, reached)
    deadline = time.monotonic() + PAUSE_LIMIT_S
    while time.monotonic() < deadline:
        if resume.exists() or not armed.exists():
            break
        time.sleep(_POLL_S)
    for leftover in (reached, resume):
        leftover.unlink(missing_ok=True)


def _note(directory: Path, name: str, context: dict[str, Any]) -> None:
    line = json.dumps({"pid": os.getpid(), "tag": _tag, "at": time.monotonic(),
                       **{k: str(v) for k, v in context.items()}})
    with open(directory / f"{name}@{_tag}.notes", "a") as notes:  # one write of one line: O_APPEND keeps lines whole
        notes.write(line + "\n")


def disabled_for_test(mechanism: str) -> bool:
    """TEST-ONLY: whether GRAVIMETA_HA_DISABLE names `mechanism` (a comma-separated list; tests/ha/conftest.py
    lists them). The HA tests set it to show that a safety test fails without its mechanism (some need two
    off: each closes the window alone); never set in service. Here, beside the failpoints, so that the
    connectors (which do not import the store) ask it the same way."""
    return mechanism in os.environ.get("GRAVIMETA_HA_DISABLE", "").split(",")
