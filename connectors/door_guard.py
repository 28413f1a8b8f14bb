"""The runtime half of "every engine change goes through one door".

gravimeta changes an engine only through gravimeta/dispatch/engine_door.py, which records the intent (or
says in code why none is needed), fences the call by the object's identity, checks the claim's time left
and bounds the call. This module lets the connectors enforce that: while gravimeta serves (every request
of the app, every repair: `serving()`), each mutating method of every Connector (MUTATORS, wrapped by
Connector.__init_subclass__) raises EngineCallOutsideDoor unless it runs inside `opened()`, which only
the door enters. A new write path that calls a connector directly then fails on its first request, in
tests and in production alike, instead of running beside the fences unnoticed.

Outside `serving()` the guard is off: the connectors' own tests, and tools that use a connector alone,
call engines directly, as a connector's user outside gravimeta would.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import Any, TypeVar

#: the Connector methods that change an engine (fence_barrier records a token: a change too)
MUTATORS = ("prepare_engine", "fence_barrier", "create_schema", "drop_schema", "create_table", "alter_table",
            "rename_table", "drop_table", "purge_table", "add_partition", "drop_partition")

_inside: ContextVar[bool] = ContextVar("inside_engine_door", default=False)
_serving: ContextVar[bool] = ContextVar("serving_gravimeta", default=False)
F = TypeVar("F", bound=Callable[..., Any])


class EngineCallOutsideDoor(RuntimeError):
    """A connector's mutating method was called outside the engine door: a bug in gravimeta."""


def enter_serving() -> Token[bool]:
    """From now on in this context (a request's thread), mutating connector calls outside the door
    raise; `leave_serving(token)` ends it."""
    return _serving.set(True)


def leave_serving(token: Token[bool] | None) -> None:
    """End what enter_serving began (None: it never began, e.g. a request refused before it)."""
    if token is None:
        return
    try:
        _serving.reset(token)
    except ValueError:  # ended in another context than it began: end it here all the same
        _serving.set(False)


@contextmanager
def serving() -> Iterator[None]:
    """The guard is on inside this block (a repair run outside a request)."""
    token = enter_serving()
    try:
        yield
    finally:
        leave_serving(token)


@contextmanager
def opened() -> Iterator[None]:
    """The door is open for the calls made inside this block (in this context only)."""
    token = _inside.set(True)
    try:
        yield
    finally:
        _inside.reset(token)


def guarded(method: F) -> F:
    """`method`, refusing to run outside the door while gravimeta serves."""

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _serving.get() and not _inside.get():
            raise EngineCallOutsideDoor(
                f"{type(self).__name__}.{method.__name__} was called outside gravimeta's engine door")
        return method(self, *args, **kwargs)

    call.__door_guarded__ = True  # type: ignore[attr-defined]
    return call  # type: ignore[return-value]
