"""A hook that runs first inside every store write transaction of the current operation.

The concurrency coordinator installs one for a structural operation (it re-reads the claim row under
a row lock and raises FenceLost if the claim was stolen), so the check and the writes commit or fail
together. The store knows nothing of claims: it only calls whatever guard is installed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from sqlalchemy.orm import Session

WriteGuard = Callable[[Session], None]

_current: ContextVar[WriteGuard | None] = ContextVar("gravimeta_write_guard", default=None)


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
