"""A hook that runs first inside every store write transaction of the current operation.

The concurrency coordinator installs one for a structural operation (it re-reads the claim row under
a row lock and raises FenceLost if the claim was stolen), so the check and the writes commit or fail
together. The store knows nothing of claims: it only calls whatever guard is installed.

A claim that lives in a database transaction of its own (a PostgreSQL advisory claim: its locks end
with that transaction) also installs that transaction with `joining()`: every store write of the
operation then runs inside it (`joined_transaction()`), after the claim's locks, instead of opening its
own, so the claim's locks cover the writes and end with their commit.

The journal marks the operation's LAST store write (its apply step) with `last_write()`: a guard may
then end its claim inside that transaction (the lease deletes its row there, in the same statement as
its check, instead of in a separate release transaction after the operation).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar

from sqlalchemy.orm import Session

WriteGuard = Callable[[Session], None]
#: opens the block in which one store write runs, inside the claim's own transaction
JoinedTransaction = Callable[[], AbstractContextManager[Session]]

_current: ContextVar[WriteGuard | None] = ContextVar("gravimeta_write_guard", default=None)
_scope: ContextVar[str] = ContextVar("gravimeta_write_guard_scope", default="")
_joined: ContextVar[JoinedTransaction | None] = ContextVar("gravimeta_joined_transaction", default=None)
_last: ContextVar[Callable[[], bool] | None] = ContextVar("gravimeta_last_write", default=None)


def current_guard() -> WriteGuard | None:
    return _current.get()


def current_scope() -> str:
    """The scope path of the claim whose guard is installed ('' when none): what the store's guard
    failpoints report, so that a test can stop a write of one scope only (gravimeta/failpoints.py)."""
    return _scope.get()


@contextmanager
def installed(guard: WriteGuard | None, scope: str | None = None) -> Iterator[None]:
    """Run every store write inside this block behind `guard`, the guard of the claim on `scope` (a
    path; None: the enclosing block's, for a guard that wraps the installed one)."""
    token, scope_token = _current.set(guard), _scope.set(_scope.get() if scope is None else scope)
    try:
        yield
    finally:
        _scope.reset(scope_token)
        _current.reset(token)


def joined_transaction() -> JoinedTransaction | None:
    """The transaction the store writes of the current operation join (None: each opens its own)."""
    return _joined.get()


@contextmanager
def joining(transaction: JoinedTransaction | None) -> Iterator[None]:
    """Run every store write inside this block in `transaction` (None: each in a transaction of its own)."""
    token = _joined.set(transaction)
    try:
        yield
    finally:
        _joined.reset(token)


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
