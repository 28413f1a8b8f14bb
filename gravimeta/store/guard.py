"""A hook that runs first inside every store write transaction of the current operation.

The concurrency coordinator installs one for a structural operation (it re-reads the claim row under
a row lock and raises FenceLost if the claim was stolen), so the check and the writes commit or fail
together. The store knows nothing of claims: it only calls whatever guard is installed.

The journal marks the operation's LAST store write (its apply step) with `last_write()`: a guard may
then end its claim inside that transaction (the lease deletes its row there, in the same statement as
its check, instead of in a separate release transaction after the operation).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from sqlalchemy.orm import Session

WriteGuard = Callable[[Session], None]

_current: ContextVar[WriteGuard | None] = ContextVar("gravimeta_write_guard", default=None)
_last: ContextVar[Callable[[], bool] | None] = ContextVar("gravimeta_last_write", default=None)


def current_guard() -> WriteGuard | None:
    return _current.get()


@contextmanager
def installed(guard: WriteGuard | None) -> Iterator[None]:
    """Run every store write inside this block behind `guard`."""
    token = _current.set(guard)
    try:
        yield
    finally:
        _current.reset(token)


def in_last_write() -> bool:
    """Whether the store write now running is the operation's last one."""
    when = _last.get()
    return when is not None and when()


@contextmanager
def last_write(when: Callable[[], bool] = lambda: True) -> Iterator[None]:
    """Mark the store write inside this block as the operation's last one (exactly one write).
    `when` is asked as the guard runs, after the write's prelude: a prelude may find out that this
    transaction is the whole operation (a process-local connector, gravimeta/dispatch/journal.py)."""
    token = _last.set(when)
    try:
        yield
    finally:
        _last.reset(token)
