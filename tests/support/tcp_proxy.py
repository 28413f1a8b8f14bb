"""A loopback TCP proxy that a test can cut and restore: the database "goes away" for the replicas
that connect through it, without touching the shared database server other tests use.

`cut()` resets every open connection (RST) and resets every new one as soon as it is accepted, which
is what a client sees while a database server restarts or a network path is down; `restore()` lets
new connections through again. The proxy runs an asyncio loop in a daemon thread; `stop()` ends it.
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
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            for w in (writer, up_writer):
                self._writers.discard(w)
                _reset(w)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        _reset(writer)


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with RST (SO_LINGER 0 via abort), so the peer sees the connection die at once."""
    with contextlib.suppress(Exception):
        writer.transport.abort()
