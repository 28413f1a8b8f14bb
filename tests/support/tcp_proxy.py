"""A loopback TCP proxy that a test can cut and restore: the database "goes away" for the replicas
that connect through it, without touching the shared database server other tests use.

`cut()` resets every open connection (RST) and resets every new one as soon as it is accepted, which
is what a client sees while a database server restarts or a network path is down; `restore()` lets
new connections through again. The proxy runs an asyncio loop in a daemon thread; `stop()` ends it.

`lose_commit(after, deliver)` cuts one connection at the COMMIT of a chosen transaction: the first COMMIT
a client sends after `after` (bytes of one of that transaction's statements, e.g. b"INSERT INTO gm_table";
looked for in what the client sent since its previous COMMIT or ROLLBACK). `deliver=True`: the COMMIT
reaches the server, and the connection is reset once the server's answer reaches the proxy (so the
transaction has committed; the client never gets the answer). `deliver=False`: the COMMIT is dropped and
the connection reset (the server rolls the transaction back). `then_cut=True`: the proxy stays cut
afterwards (the database is unreachable until `restore()`). Both protocols carry the statement's text
in the clear: PostgreSQL's Query/Parse messages and MariaDB's COM_QUERY.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from concurrent.futures import Future


class TcpProxy:
    def __init__(self, target_host: str, target_port: int, host: str = "127.0.0.1", port: int = 0):
        """`port`: listen there (0: a free port); a stopped proxy can be started again on its old port."""
        self.target = (target_host, target_port)
        self.host = host
        self.port = port
        self._cut = False
        self._writers: set[asyncio.StreamWriter] = set()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="tcp-proxy")
        self._server: asyncio.base_events.Server | None = None
        self._commit_loss: _CommitLoss | None = None
        self.accepted = 0
        self.refused = 0

    # ---------------------------------------------------------------- control (from the test's thread)

    def start(self) -> TcpProxy:
        self._thread.start()
        self._call(self._start())
        return self

    def cut(self) -> None:
        """Reset all open connections and refuse new ones until restore()."""
        self._call(self._set_cut(True))

    def restore(self) -> None:
        self._call(self._set_cut(False))

    def lose_commit(self, after: bytes, deliver: bool, then_cut: bool = False) -> threading.Event:
        """Arm the cut of the next COMMIT of a transaction that sent `after` (module docstring); the
        event is set once the connection was cut."""
        loss = _CommitLoss(after, deliver, then_cut)
        self._commit_loss = loss
        return loss.done

    def lose_reply(self, statement: bytes, then_cut: bool = False) -> threading.Event:
        """Arm the cut of the connection that next sends `statement` (bytes of its text): the statement
        reaches the server, and the connection is reset once the server's answer reaches the proxy. For a
        statement that commits by itself (autocommit, a procedure that commits), as lose_commit does for
        a COMMIT."""
        loss = _CommitLoss(statement, True, then_cut, at=statement)
        self._commit_loss = loss
        return loss.done

    def disarm(self) -> None:
        """Forget a lose_commit() that has not fired yet."""
        self._commit_loss = None

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        with contextlib.suppress(Exception):
            self._call(self._shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _call(self, coro: object, timeout: float = 10.0) -> object:
        future: Future[object] = asyncio.run_coroutine_threadsafe(coro, self._loop)  # type: ignore[arg-type]
        return future.result(timeout)

    # ---------------------------------------------------------------- the loop's side

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _set_cut(self, value: bool) -> None:
        self._cut = value
        if value:
            for writer in list(self._writers):
                _reset(writer)
            self._writers.clear()

    async def _shutdown(self) -> None:
        await self._set_cut(True)
        if self._server is not None:
            self._server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._cut:
            self.refused += 1
            _reset(writer)
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(*self.target), 5)
        except (TimeoutError, OSError):
            _reset(writer)
            return
        self.accepted += 1
        self._writers.update((writer, up_writer))
        link = _Link(writer, up_writer)
        try:
            await asyncio.gather(self._upstream(reader, link), self._downstream(up_reader, link))
        finally:
            for w in (writer, up_writer):
                self._writers.discard(w)
                _reset(w)

    async def _upstream(self, reader: asyncio.StreamReader, link: _Link) -> None:
        """Client to server, watching for the COMMIT that lose_commit() armed."""
        try:
            while data := await reader.read(65536):
                loss = self._commit_loss
                if loss is not None and not loss.fired:
                    if loss.at in data and loss.after in link.sent_since_commit + data:
                        loss.fired = True
                        if not loss.deliver:
                            await self._lose(link, loss)
                            return
                        link.swallow = loss  # the server's answer is dropped, then the link reset
                    elif b"COMMIT" in data or b"ROLLBACK" in data:
                        link.sent_since_commit = b""
                    else:
                        link.sent_since_commit = (link.sent_since_commit + data)[-65536:]
                link.up.write(data)
                await link.up.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            _reset(link.up)

    async def _downstream(self, reader: asyncio.StreamReader, link: _Link) -> None:
        try:
            while data := await reader.read(65536):
                if link.swallow is not None:  # the answer to the lost COMMIT: the transaction committed
                    await self._lose(link, link.swallow)
                    return
                link.down.write(data)
                await link.down.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            _reset(link.down)


    async def _lose(self, link: _Link, loss: _CommitLoss) -> None:
        if loss.then_cut:
            await self._set_cut(True)
        link.reset()
        loss.done.set()


class _CommitLoss:
    def __init__(self, after: bytes, deliver: bool, then_cut: bool, at: bytes = b"COMMIT"):
        self.after, self.deliver, self.then_cut, self.at = after, deliver, then_cut, at
        self.fired = False
        self.done = threading.Event()


class _Link:
    """One proxied connection: the client's side (`down`) and the server's (`up`)."""

    def __init__(self, down: asyncio.StreamWriter, up: asyncio.StreamWriter):
        self.down, self.up = down, up
        self.sent_since_commit = b""
        self.swallow: _CommitLoss | None = None

    def reset(self) -> None:
        _reset(self.down)
        _reset(self.up)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with RST (SO_LINGER 0 via abort), so the peer sees the connection die at once."""
    with contextlib.suppress(Exception):
        writer.transport.abort()
