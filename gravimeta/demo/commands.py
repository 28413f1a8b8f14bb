"""`gravimeta demo race`: the command layer over gravimeta.demo.race."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click


@click.group("demo")
def demo_command() -> None:
    """Demonstrations against running replicas."""


@demo_command.command("race")
@click.option("--replica", "replica_urls", multiple=True,
              help="a replica's base URL (repeat); default: the replicas of the cluster in --run-dir.")
@click.option("--run-dir", default="var/cluster", show_default=True, type=click.Path(file_okay=False),
              help="a `gravimeta cluster` run directory to take replicas, store URL and SQLite root from.")
@click.option("--sqlite-root", type=click.Path(file_okay=False),
              help="the replicas' GRAVIMETA_SQLITE_CATALOG_ROOT (to compare the sqlite catalog's real files).")
@click.option("--ops", type=click.IntRange(1, 100_000), default=400, show_default=True, help="operations to send.")
@click.option("--seconds", type=click.FloatRange(1, 3600), default=40.0, show_default=True,
              help="no new operation starts after this; requests in flight finish (up to 60 s more), then the check.")
@click.option("--threads", type=click.IntRange(1, 64), default=12, show_default=True)
@click.option("--seed", type=int, help="random seed (the interleaving still depends on timing).")
@click.option("--history", "history_file", type=click.Path(dir_okay=False), help="write the history as JSON here.")
@click.pass_obj
def race(settings: Any, replica_urls: tuple[str, ...], run_dir: str, sqlite_root: str | None, ops: int,
         seconds: float, threads: int, seed: int | None, history_file: str | None) -> None:
    """Fire conflicting structural operations at several replicas, then check the final state.
    Exits 1 when the checker finds violations."""
    from gravimeta.cluster_state import ClusterState
    from gravimeta.demo.client import Replica
    from gravimeta.demo.race import RaceConfig, run_race
    from gravimeta.store.database import create_store_engine

    state = ClusterState.load(Path(run_dir))
    store_url = settings.store_url or (state.store_url if state else "")
    from_cluster = not replica_urls and state is not None
    if not replica_urls and state:
        replica_urls = tuple(r.url for r in state.replicas)
    if not replica_urls or not store_url:
        raise click.UsageError("no cluster in --run-dir: give --replica URL (repeat) and --store-url (before `demo`)")
    root = sqlite_root or (state.sqlite_root if state else None)
    replicas = [Replica(u, f"r{i}") for i, u in enumerate(replica_urls, start=1)]
    engine = create_store_engine(store_url)
    click.echo(f"race: {ops} ops max, {seconds:g}s max, {threads} threads, replicas "
               + ", ".join(f"{r.name}={r.url}" for r in replicas))
    if from_cluster and state is not None:
        lock = f"ON (backend {state.backend})" if state.lock else "OFF"
        click.echo(f"distributed lock: {lock}, from {run_dir}/state.json")
    else:
        click.echo(f"distributed lock, as the workers registered it: {_lock_state(engine)}")

    progress = Progress(sys.stdout.isatty())
    try:
        result = run_race(RaceConfig(replicas, engine, Path(root) if root else None, ops, seconds, threads, seed),
                          progress.show)
    finally:
        engine.dispose()
    progress.end()
    if history_file:
        Path(history_file).write_text(result.history.to_json())
    click.echo(f"metalake {result.metalake}: {len(result.history.ops)} operations recorded in {result.elapsed:.1f}s "
               f"(including setup); final state read via the API, SQL and the SQLite files")
    click.echo(result.report.render())
    sys.exit(0 if result.report.ok else 1)


class Progress:
    """The race's progress line: rewritten in place (`\\r`) on a terminal; elsewhere (a log, a CI job,
    `docker-compose run`) one plain line every `every_s` seconds and the last one, not a flood of
    carriage returns."""

    def __init__(self, tty: bool, every_s: float = 10.0):
        self.tty, self.every_s = tty, every_s
        self.shown_at = float("-inf")
        self.last = self.printed = ""

    def show(self, line: str) -> None:
        self.last = line
        if self.tty:
            click.echo("\r" + line, nl=False)
        elif time.monotonic() - self.shown_at >= self.every_s:
            click.echo(line)
            self.shown_at, self.printed = time.monotonic(), line

    def end(self) -> None:
        if self.tty:
            click.echo("")
        elif self.last and self.last != self.printed:
            click.echo(self.last)


def _lock_state(engine: Any) -> str:
    """What the live worker rows in gm_node say about the flag (informational)."""
    try:
        from gravimeta.concurrency.node_registry import list_nodes

        live = [n for n in list_nodes(engine) if n["live"]]
    except Exception as exc:  # informational only; the race itself does not need it
        return f"unknown ({type(exc).__name__})"
    flags = sorted({"ON" if n["lockEnabled"] else "OFF" for n in live})
    return f"{'/'.join(flags) or 'unknown'} ({len(live)} worker rows with a heartbeat in the last 90 s)"
