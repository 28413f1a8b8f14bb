"""The `gravimeta` command: serve, db upgrade/current, repair."""

from __future__ import annotations

import logging
import sys

import click

from gravimeta.config import load_settings
from gravimeta.errors import SchemaVersionMismatch


@click.group()
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False),
              envvar="GRAVIMETA_CONFIG", help="Gravitino-style properties file.")
@click.option("--store-url", help="SQLAlchemy URL of the metadata database (default: embedded SQLite in ./var).")
@click.pass_context
def main(ctx: click.Context, config_file: str | None, store_url: str | None) -> None:
    """gravimeta: a Gravitino-compatible metadata catalog server."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("alembic").setLevel(logging.WARNING)
    from gravimeta.api.request_log import configure_json_lines

    configure_json_lines()  # one bare JSON line per request (gravimeta/api/request_log.py)
    try:
        ctx.obj = load_settings(config_file, store_url=store_url)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


@main.command()
@click.option("--bind", help="host:port to listen on (default from settings: 127.0.0.1:8090).")
@click.option("--workers", type=int, help="gunicorn worker processes (default 2).")
@click.option("--threads", type=int, default=4, show_default=True, help="threads per worker.")
@click.option("--timeout", type=int, default=60, show_default=True, help="worker timeout in seconds.")
@click.option("--migrate/--no-migrate", default=False, help="run `db upgrade` before serving.")
@click.pass_obj
def serve(settings, bind, workers, threads, timeout, migrate) -> None:  # type: ignore[no-untyped-def]
    """Serve the REST API with gunicorn."""
    from gravimeta.api.auth import build_authenticators
    from gravimeta.server import GunicornServer
    from gravimeta.store.database import create_store_engine
    from gravimeta.store.migrations import check_schema, upgrade

    engine = create_store_engine(settings.resolved_store_url())
    try:
        if migrate:
            upgrade(engine)
        check_schema(engine)
    except SchemaVersionMismatch as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    finally:
        engine.dispose()
    try:
        build_authenticators(settings)  # a bad key or algorithm fails here, not in every worker
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    _prepare_multiprocess_metrics()
    bind = bind or f"{settings.host}:{settings.port}"
    click.echo(f"gravimeta serving http://{bind}/api on {engine.url.render_as_string(hide_password=True)}")
    options = {
        "bind": bind,
        "workers": workers or settings.workers,
        "threads": threads,
        "worker_class": "gthread",
        "timeout": timeout,
        "graceful_timeout": 30,  # a SIGTERM'd worker finishes its in-flight requests (server.py)
    }
    GunicornServer(settings, options).run()


def _prepare_multiprocess_metrics() -> None:
    """Give gunicorn's workers a shared directory for Prometheus samples (before any worker imports
    prometheus_client), so /metrics on any worker reports the sum over all of them."""
    import os
    import tempfile

    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="gravimeta-metrics-")


@main.command()
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of a table.")
@click.pass_obj
def locks(settings, as_json: bool) -> None:  # type: ignore[no-untyped-def]
    """List the cross-node claims and the registered replicas in the shared database."""
    import json

    from gravimeta.concurrency.node_registry import list_nodes
    from gravimeta.concurrency.reclaimer import live_claims
    from gravimeta.store.database import create_store_engine

    engine = create_store_engine(settings.resolved_store_url())
    claims, nodes = live_claims(engine), list_nodes(engine)
    engine.dispose()
    if as_json:
        click.echo(json.dumps({"claims": claims, "nodes": nodes}, indent=2))
        return
    click.echo(f"{len(claims)} claim(s)")
    for c in claims:
        state = "live" if c["live"] else "EXPIRED"
        click.echo(f"  {c['path']}  fence={c['fence']}  holder={c['holder']}  expires={c['expires_at']}  {state}")
    click.echo(f"{len(nodes)} worker process(es)")
    for n in nodes:
        flag = "lock ON " if n["lockEnabled"] else "lock OFF"
        click.echo(f"  {n['node']}  {flag} {n['backend']}  heartbeat={n['heartbeatAt']}  {'live' if n['live'] else 'gone'}")


@main.group()
def db() -> None:
    """Database schema migrations (Alembic)."""


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True)
@click.pass_obj
def db_upgrade(settings, revision: str) -> None:  # type: ignore[no-untyped-def]
    """Create or migrate the metadata tables."""
    from gravimeta.store.database import create_store_engine
    from gravimeta.store.migrations import current_revision, upgrade

    engine = create_store_engine(settings.resolved_store_url())
    before = current_revision(engine)
    upgrade(engine, revision)
    after = current_revision(engine)
    click.echo(f"{engine.url.render_as_string(hide_password=True)}: schema revision {before or 'none'} -> {after}")
    engine.dispose()


@db.command("current")
@click.pass_obj
def db_current(settings) -> None:  # type: ignore[no-untyped-def]
    """Print the database's schema revision and this code's head revision."""
    from gravimeta.store.database import create_store_engine
    from gravimeta.store.migrations import current_revision, head_revision

    engine = create_store_engine(settings.resolved_store_url())
    click.echo(f"current: {current_revision(engine) or 'none'}  head: {head_revision()}")
    engine.dispose()


@main.command()
@click.option("--settle-seconds", type=float, default=None,
              help="treat intents older than this as final when the engine does not show them (default 30).")
@click.option("--list", "list_only", is_flag=True, help="only list the open intents.")
@click.pass_obj
def repair(settings, settle_seconds: float | None, list_only: bool) -> None:  # type: ignore[no-untyped-def]
    """Finish or undo connector operations left open in the operation journal (docs/consistency.md)."""
    from gravimeta.app import build_services

    services = build_services(settings)
    try:
        if not list_only:
            outcomes = services.reconciler.repair_pending(settle_seconds)
            click.echo("repair: " + (", ".join(f"{n} {k}" for k, n in sorted(outcomes.items())) or "nothing to do"))
        for intent in services.reconciler.journal.pending():
            click.echo(f"open: #{intent.id} {intent.operation} {intent.scope_path} {intent.state} "
                       f"since {intent.created_at} by {intent.holder}: {intent.detail or ''}")
    finally:
        services.store.engine.dispose()


@main.group("hive-stub")
def hive_stub() -> None:
    """The Hive-metastore-like HTTP service behind the `hive` provider (for tests and demos)."""


@hive_stub.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="address to bind (keep it loopback).")
@click.option("--port", type=int, default=0, show_default=True, help="port; 0 picks a free one.")
@click.option("--data", "data_dir", type=click.Path(file_okay=False), required=True, help="storage directory.")
@click.option("--ready-file", type=click.Path(dir_okay=False), help="write the bound port here once listening.")
def hive_stub_serve(host: str, port: int, data_dir: str, ready_file: str | None) -> None:
    """Serve the stub metastore until killed."""
    from pathlib import Path

    from connectors.hive_stub.server import serve

    serve(host, port, Path(data_dir), Path(ready_file) if ready_file else None)


def _add_owned_commands() -> None:
    """`cluster` and `demo` live in their own modules (gravimeta/cluster.py, gravimeta/demo/)."""
    from gravimeta.cluster import cluster_command
    from gravimeta.demo.commands import demo_command

    main.add_command(cluster_command)
    main.add_command(demo_command)


_add_owned_commands()

if __name__ == "__main__":
    main()
