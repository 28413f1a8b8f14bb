"""The Promela models (docs/claim-model.md), checked by spin: the claim protocol (claim_protocol.pml)
and the journalled engine changes under it (engine_protocol.pml).

Each case generates the verifier (`spin -a`), compiles it and runs `./pan` in its own temporary
directory. The fixed protocol must be verified exhaustively: no error, a complete search (no depth
truncation, no memory bound), and states explored. Each reverted-fix variant must give a
counterexample: an assertion violation and a trail that replays. The liveness configuration of the claim
model (ROOT_FAIR: a root claim against a churn, docs/claim-model.md) is checked for acceptance cycles under
weak fairness (`pan -a -f`), one ltl property at a time; its reverted variants must give a cycle.

pan.c is compiled with -O0 (about 1 s; -O2 takes ~15 s for the claim model): the compile costs more
than the search of most cases. The one large case of the suite (MIXED, 3.4 M states) is compiled with
-O1 (about 7 s), which halves its search. The whole module takes about a minute of CPU.
Skipped when spin or gcc is missing, except under CI, which installs both (.ci/run) and must run it.
GRAVIMETA_MODEL_FULL=1 also runs the larger configurations (several minutes).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

CLAIM_MODEL = Path(__file__).with_name("claim_protocol.pml")
ENGINE_MODEL = Path(__file__).with_name("engine_protocol.pml")
PAN_TIMEOUT_S = 300
MEMORY_LIMIT_MB = 2048  # pan stops (and the check fails as incomplete) rather than swap a shared machine


@dataclass
class PanResult:
    output: str
    errors: int
    states: int
    depth: int
    seconds: float
    trail: Path | None
    directory: Path
    model: Path

    @property
    def complete(self) -> bool:
        incomplete = ("search not completed", "max search depth too small", "out of memory", "memlim")
        return "full statespace search" in self.output.lower() and not any(
            marker in self.output.lower() for marker in incomplete
        )


def _tools() -> None:
    missing = [tool for tool in ("spin", "gcc") if shutil.which(tool) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"{' and '.join(missing)} not installed, and CI must check the claim model (.ci/run installs them)")
        pytest.skip(f"{' and '.join(missing)} not installed (Debian: apt-get install spin gcc)")


def _run(command: list[str], cwd: Path, timeout: float) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    output = done.stdout + done.stderr
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(command)} exited {done.returncode}:\n{output}")
    return output


def check_model(directory: Path, defines: list[str], model: Path = CLAIM_MODEL) -> PanResult:
    """spin -a, gcc, ./pan in `directory`; the parsed result."""
    _tools()
    shutil.copy(model, directory / model.name)
    _run(["spin", "-a", *defines, model.name], directory, 60)
    optimize = "-O1" if (model, defines) in LONG_SEARCHES else "-O0"
    _run(["gcc", optimize, "-DSAFETY", "-DCOLLAPSE", f"-DMEMLIM={MEMORY_LIMIT_MB}", "-o", "pan", "pan.c"], directory, 120)
    # pan exits 0 whether or not it found an error: the verdict is in its report
    output = _run(["./pan", "-m100000"], directory, PAN_TIMEOUT_S)

    def number(pattern: str, cast: type = int) -> object:
        found = re.search(pattern, output)
        assert found, f"pan's report has no match for {pattern!r}:\n{output}"
        return cast(found.group(1))

    trail = directory / f"{model.name}.trail"
    return PanResult(
        output=output,
        errors=int(str(number(r"errors: (\d+)"))),
        states=int(str(number(r"(\d+) states, stored"))),
        depth=int(str(number(r"depth reached (\d+)"))),
        seconds=float(str(number(r"pan: elapsed time ([0-9.e+]+) seconds", float))),
        trail=trail if trail.exists() else None,
        directory=directory,
        model=model,
    )


def check_liveness(directory: Path, defines: list[str], claim: str, model: Path = CLAIM_MODEL) -> PanResult:
    """spin -a, gcc (no -DSAFETY: the never claim of ltl `claim`, weak fairness), ./pan -a -f -N claim."""
    _tools()
    shutil.copy(model, directory / model.name)
    _run(["spin", "-a", *defines, model.name], directory, 60)
    _run(["gcc", "-O0", "-DCOLLAPSE", "-DNFAIR=3", f"-DMEMLIM={MEMORY_LIMIT_MB}", "-o", "pan", "pan.c"], directory, 120)
    output = _run(["./pan", "-a", "-f", "-m100000", "-N", claim], directory, PAN_TIMEOUT_S)

    def number(pattern: str, cast: type = int) -> object:
        found = re.search(pattern, output)
        assert found, f"pan's report has no match for {pattern!r}:\n{output}"
        return cast(found.group(1))

    trail = directory / f"{model.name}.trail"
    return PanResult(
        output=output,
        errors=int(str(number(r"errors: (\d+)"))),
        states=int(str(number(r"(\d+) states, stored"))),
        depth=int(str(number(r"depth reached (\d+)"))),
        seconds=float(str(number(r"pan: elapsed time ([0-9.e+]+) seconds", float))),
        trail=trail if trail.exists() else None,
        directory=directory,
        model=model,
    )


def replay(result: PanResult, defines: list[str]) -> str:
    """The counterexample as the model's own printf lines (spin -t)."""
    return _run(["spin", "-t", *defines, result.model.name], result.directory, 60)


FULL = pytest.mark.skipif(not os.environ.get("GRAVIMETA_MODEL_FULL"), reason="set GRAVIMETA_MODEL_FULL=1")
MIXED = ["-DMIXED"]
#: cases whose search is long enough that a slower, optimizing compile pays for itself
LONG_SEARCHES = [(CLAIM_MODEL, MIXED), (CLAIM_MODEL, ["-DMIXED", "-DADV_KEEP_SHARE"]), (CLAIM_MODEL, ["-DMAXRECLAIM=0"]),
                 (CLAIM_MODEL, ["-DRENEWERS=1"]), (CLAIM_MODEL, ["-DSIBLINGS", "-DRENEWERS=1"]),
                 (CLAIM_MODEL, ["-DROOT", "-DRENEWERS=1"]), (ENGINE_MODEL, ["-DREPAIRER"])]

# the protocol as the code runs it, every reachable state
FIXED = [
    pytest.param(["-DNREQ=2"], id="two-lease-replicas"),
    pytest.param(["-DNREQ=2", "-DLAST_WRITE"], id="two-lease-replicas-last-write-guard"),
    pytest.param(["-DNREQ=2", "-DTIMEOUTS"], id="two-lease-replicas-lock-timeouts"),
    pytest.param(["-DNREQ=2", "-DSAME_PATH"], id="two-lease-replicas-same-path"),
    pytest.param(MIXED, id="two-lease-replicas-and-advisory"),
    pytest.param(["-DSIBLINGS", "-DRENEWERS=0"], id="unrelated-siblings-and-their-parent"),
    pytest.param(["-DROOT", "-DRENEWERS=0"], id="root-claim-and-two-metalakes"),
    # the root claim waiting for a locked related row, as before alembic 0020: safe too (the NOWAIT is for liveness)
    pytest.param(["-DROOT", "-DRENEWERS=0", "-DROOT_WAITS"], id="root-claim-that-waits-for-locked-rows"),
    # larger: GRAVIMETA_MODEL_FULL=1
    pytest.param(["-DMIXED", "-DADV_KEEP_SHARE"], id="advisory-keeps-its-row-locks", marks=FULL),
    pytest.param(["-DMAXRECLAIM=0"], id="three-lease-replicas-no-reclaimer", marks=FULL),
    pytest.param(["-DSIBLINGS", "-DRENEWERS=1"], id="siblings-with-a-heartbeat", marks=FULL),
    pytest.param(["-DROOT", "-DRENEWERS=1"], id="root-with-a-heartbeat", marks=FULL),
    pytest.param(["-DRENEWERS=1"], id="three-lease-replicas-one-heartbeat-and-reclaimer", marks=FULL),
]

# (defines, what the counterexample must show): each reverted fix must be caught
REVERTED = [
    pytest.param(["-DNREQ=2", "-DBUG_LEASE"], "removed 0 row(s)", id="lease-plain-liveness-read"),
    pytest.param(["-DMIXED", "-DBUG_LEASE"], "plain read", id="lease-plain-liveness-read-mixed"),
    pytest.param(["-DMIXED", "-DBUG_ADVISORY"], "guard passed", id="advisory-plain-exists"),
    pytest.param(["-DMIXED", "-DBUG_ADVISORY_WHERE"], "guard passed", id="advisory-for-share-expiry-in-where"),
    pytest.param(["-DROOT", "-DRENEWERS=0", "-DBUG_ROOT_FENCE"], "claim on 0 granted", id="root-fence-from-root-anchor-only"),
    # not a fix: the waiting root claim's record read before '/' is locked (property 7 is not vacuous)
    pytest.param(["-DROOT", "-DRENEWERS=0", "-DBUG_HELD_EARLY"], "recorded as the waiting root claim",
                 id="root-record-read-before-the-lock"),
    # not a fix: the model's properties are not vacuous (a write after a steal is caught)
    pytest.param(["-DNREQ=2", "-DNO_FENCE"], "removed 1 row(s)", id="no-fence-guard"),
]


@pytest.mark.parametrize("defines", FIXED)
def test_fixed_protocol_is_verified(tmp_path: Path, defines: list[str]) -> None:
    result = check_model(tmp_path, defines)
    detail = result.output if result.trail is None else result.output + "\n" + replay(result, defines)
    assert result.errors == 0, f"spin found a violation of the fixed protocol ({defines}):\n{detail}"
    assert result.trail is None
    assert result.complete, f"the search was not exhaustive ({defines}):\n{result.output}"
    assert result.states > 1000, f"too few states explored to mean anything ({defines}):\n{result.output}"
    print(f"{defines}: {result.states} states, depth {result.depth}, {result.seconds} s")


@pytest.mark.parametrize("defines,shows", REVERTED)
def test_reverted_fix_gives_a_counterexample(tmp_path: Path, defines: list[str], shows: str) -> None:
    result = check_model(tmp_path, defines)
    assert result.errors >= 1, f"spin did not catch the reverted fix ({defines}):\n{result.output}"
    assert "assertion violated" in result.output, result.output
    assert result.states > 0
    assert result.trail is not None, f"no trail written:\n{result.output}"
    steps = replay(result, defines)
    assert "assertion violated" in steps, steps
    assert "granted" in steps and shows in steps, steps
    print(f"{defines}: counterexample after {result.states} states, depth {result.depth}")


# the root claim against a churn (ROOT_FAIR): (defines, ltl property) verified under weak fairness
LIVE = [
    pytest.param(["-DROOT_FAIR"], "root_gets_in", id="a-waiting-root-claim-gets-in-while-others-churn"),
    pytest.param(["-DROOT_FAIR"], "others_go_on", id="the-others-go-on-after-the-root-claim"),
    pytest.param(["-DROOT_FAIR", "-DROOT_DIES"], "others_go_on", id="the-others-go-on-after-the-waiter-dies"),
]

# (defines, ltl property, lines the cycle must show): each reverted fix must give an acceptance cycle
LIVE_REVERTED = [
    pytest.param(["-DROOT_FAIR", "-DNO_HOLDBACK"], "root_gets_in",
                 ["claim on 3 granted", "claim on 5 granted", "c1: claim on 0 not granted"],
                 id="no-hold-back-the-root-claim-starves"),
    pytest.param(["-DROOT_FAIR", "-DROOT_DIES", "-DBUG_RECORD_NO_EXPIRY"], "others_go_on",
                 ["recorded as the waiting root claim", "the waiting root claim dies", "held back by the waiting"],
                 id="a-record-that-never-ends-holds-the-others-forever"),
]


@pytest.mark.parametrize("defines,claim", LIVE)
def test_root_claim_liveness_is_verified(tmp_path: Path, defines: list[str], claim: str) -> None:
    result = check_liveness(tmp_path, defines, claim)
    detail = result.output if result.trail is None else result.output + "\n" + replay(result, defines)
    assert result.errors == 0, f"spin found a cycle that breaks {claim} ({defines}):\n{detail}"
    assert result.trail is None
    assert result.complete, f"the search was not exhaustive ({defines}):\n{result.output}"
    assert "acceptance   cycles \t+ (fairness enabled)" in result.output, result.output
    assert result.states > 1000, f"too few states explored to mean anything ({defines}):\n{result.output}"
    print(f"{defines} {claim}: {result.states} states, depth {result.depth}, {result.seconds} s")


@pytest.mark.parametrize("defines,claim,shows", LIVE_REVERTED)
def test_reverted_root_fairness_gives_a_cycle(tmp_path: Path, defines: list[str], claim: str, shows: list[str]) -> None:
    result = check_liveness(tmp_path, defines, claim)
    assert result.errors >= 1, f"spin found no cycle breaking {claim} ({defines}):\n{result.output}"
    assert "acceptance cycle" in result.output, result.output
    assert result.trail is not None, f"no trail written:\n{result.output}"
    steps = replay(result, defines)
    assert "START OF CYCLE" in steps, steps
    cycle = steps.split("START OF CYCLE", 1)[1]
    for line in shows:
        assert line in steps, f"{line!r} not in the counterexample:\n{steps}"
    assert "claim on 0 granted" not in cycle, f"the root claim is granted inside the cycle:\n{cycle}"
    print(f"{defines} {claim}: cycle after {result.states} states, depth {result.depth}")


# ---------------------------------------------------------------------------------------------------
# engine_protocol.pml: intents, fenced engine calls, store steps, repairs behind the barrier, renames,
# imports and unlinks. Each configuration is small (under 0.15 M states, under a second of search); the
# compile of each variant costs more than its search, so the suite runs one reverted variant per fix
# and GRAVIMETA_MODEL_FULL=1 adds the rest.
# (id, defines): the design with its fixes, every reachable state
ENGINE_FIXED = [
    pytest.param([], id="tables-import-drop-rename"),
    pytest.param(["-DRENAME"], id="tables-drop-rename-repair"),
    pytest.param(["-DSCHEMAS"], id="schemas-drop-create-rename"),
    pytest.param(["-DREPAIRER"], id="tables-import-drop-rename-repair", marks=FULL),  # 6.7 M states, ~20 s
    # each half of the import fix alone closes the window of these configurations (the design has both)
    pytest.param(["-DBUG_IMPORT_INTENT"], id="tables-only-imports-fenced", marks=FULL),
    pytest.param(["-DBUG_IMPORT_BARRIER"], id="tables-only-engine-drops-journalled", marks=FULL),
]

# (defines, lines the counterexample must show): each reverted fix must be caught
ENGINE_REVERTED = [
    pytest.param(["-DRENAME", "-DBUG_PATH_KEY"], ["catalog renamed", "engine dropped t (fence 1"],
                 id="fences-keyed-by-path"),
    pytest.param(["-DBUG_IMPORT"], ["import reads the engine (no barrier)", "engine dropped t"],
                 id="import-unfenced-engine-drop-unjournalled"),
    pytest.param(["-DSCHEMAS", "-DBUG_UNLINK"], ["engine created s (2)", "unlinked the file of s (1)"],
                 id="unlink-by-name"),
    # not a fix: the repair's barrier itself (the properties are not vacuous)
    pytest.param(["-DRENAME", "-DNO_BARRIER"], ["observes: applied 0", "engine dropped t"],
                 id="repair-without-barrier"),
    pytest.param(["-DBUG_PATH_KEY"], ["catalog renamed", "engine dropped t"], id="fences-keyed-by-path-tables",
                 marks=FULL),
    pytest.param(["-DSCHEMAS", "-DBUG_PATH_KEY"], ["catalog renamed", "engine dropped s"],
                 id="fences-keyed-by-path-schemas", marks=FULL),
]


@pytest.mark.parametrize("defines", ENGINE_FIXED)
def test_engine_design_is_verified(tmp_path: Path, defines: list[str]) -> None:
    result = check_model(tmp_path, defines, ENGINE_MODEL)
    detail = result.output if result.trail is None else result.output + "\n" + replay(result, defines)
    assert result.errors == 0, f"spin found a violation of the engine design ({defines}):\n{detail}"
    assert result.trail is None
    assert result.complete, f"the search was not exhaustive ({defines}):\n{result.output}"
    assert result.states > 1000, f"too few states explored to mean anything ({defines}):\n{result.output}"
    print(f"engine {defines}: {result.states} states, depth {result.depth}, {result.seconds} s")


@pytest.mark.parametrize("defines,shows", ENGINE_REVERTED)
def test_engine_reverted_fix_gives_a_counterexample(tmp_path: Path, defines: list[str], shows: list[str]) -> None:
    result = check_model(tmp_path, defines, ENGINE_MODEL)
    assert result.errors >= 1, f"spin did not catch the reverted fix ({defines}):\n{result.output}"
    assert "assertion violated" in result.output, result.output
    assert result.trail is not None, f"no trail written:\n{result.output}"
    steps = replay(result, defines)
    assert "assertion violated" in steps, steps
    for line in ["claim granted", *shows]:
        assert line in steps, f"{line!r} not in the counterexample:\n{steps}"
    print(f"engine {defines}: counterexample after {result.states} states, depth {result.depth}")
