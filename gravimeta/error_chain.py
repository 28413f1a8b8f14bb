"""Walking the chain of errors an error was raised from, safely.

`raise a from b` sets a.__cause__; raising while handling sets __context__. Nothing stops such a chain
from looping back on itself (an error raised "from" itself, or two errors that each became the other's
cause), and a loop that walks it until None then never ends: a request once pinned a worker thread at
full CPU that way. Every walk over __cause__/__context__ goes through `error_chain`, which yields each
error at most once.
"""

from __future__ import annotations

from collections.abc import Iterator


def error_chain(exc: BaseException | None, implicit: bool = True, limit: int | None = None
                ) -> Iterator[BaseException]:
    """`exc`, then the error it was raised from (__cause__) or, with `implicit` and no cause, the one
    being handled when it was raised (__context__), and so on; each error once (a cycle ends the walk),
    at most `limit` errors."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen and (limit is None or len(seen) < limit):
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or (exc.__context__ if implicit else None)
