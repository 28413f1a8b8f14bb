"""The Prometheus multiprocess directory of one `gravimeta serve`.

prometheus_client decides how a process stores its samples when it is first imported: with
PROMETHEUS_MULTIPROC_DIR set, in memory-mapped files in that directory (one per process and kind), so
that /metrics on any gunicorn worker can sum the samples of every worker, live or exited; without it,
in the memory of that one process, and the multiprocess collector then finds nothing to read (an empty
scrape). So the variable must be set in the gunicorn master before anything imports prometheus_client:
`serve` calls prepare() first, and prepare() refuses to go on when it is too late.

Files left behind are wrong on the next start (counters would continue from a dead server's values),
and a directory per start fills /tmp: a directory that prepare() creates is named after the master's
pid and removed when that master exits (remove()); directories of masters that died without cleaning
up (kill -9) are swept at the next start. A directory the operator chose (PROMETHEUS_MULTIPROC_DIR
already set) is kept, but its sample files are deleted at start, as prometheus_client requires.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

ENV = "PROMETHEUS_MULTIPROC_DIR"
PREFIX = "gravimeta-metrics-"
_OURS = re.compile(re.escape(PREFIX) + r"(\d+)-")
_SAMPLE_FILES = ("counter_*.db", "gauge_*.db", "histogram_*.db", "summary_*.db")


def prepare() -> Path | None:
    """Give this process (the gunicorn master) and its workers a multiprocess directory. Returns the
    directory if this call created it (the caller removes it with remove()), None if the operator
    gave one."""
    _refuse_if_too_late()
    given = os.environ.get(ENV)
    if given:
        for pattern in _SAMPLE_FILES:
            for stale in Path(given).glob(pattern):
                stale.unlink(missing_ok=True)
        return None
    base = Path(tempfile.gettempdir())
    _sweep_orphans(base)
    created = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=base))
    os.environ[ENV] = str(created)
    return created


def remove(directory: Path | None, owner_pid: int) -> None:
    """Delete `directory` if this process is `owner_pid`. gunicorn forks its workers inside the
    master's call stack, so a worker leaving through SystemExit runs the master's `finally` blocks too:
    only the master may remove the directory its workers still write to."""
    if directory is not None and os.getpid() == owner_pid:
        shutil.rmtree(directory, ignore_errors=True)


def _refuse_if_too_late() -> None:
    values = sys.modules.get("prometheus_client.values")
    if values is not None and "Mmaped" not in getattr(values, "ValueClass", type).__name__:
        raise RuntimeError(
            "prometheus_client was imported before its multiprocess directory was set: "
            "gunicorn workers would each count alone and /metrics would be empty"
        )


def _sweep_orphans(base: Path) -> None:
    """Remove the directories of gravimeta masters that are gone (killed without cleaning up)."""
    for candidate in base.glob(f"{PREFIX}*"):
        match = _OURS.match(candidate.name)
        if match and candidate.is_dir() and not _alive(int(match.group(1))):
            shutil.rmtree(candidate, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
