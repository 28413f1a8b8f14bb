"""The `gravimeta` command: serve, db upgrade/current, repair."""

from __future__ import annotations

import logging
import sys

import click

from gravimeta.config import load_settings
from gravimeta.errors import SchemaVersionMismatch


class _Commands(click.Group):
    """The command group: a store driver that is not installed is a one-line hint in every command
    (cluster start, demo, repair, ...), wherever the command first touches the store, not a traceback."""

    def invoke(self, ctx: click.Context) -> object:
        from gravimeta.store_target import missing_driver_hint

        try:
            return super().invoke(ctx)
        except ModuleNotFoundError as exc:
            hint = missing_driver_hint(exc)
            if hint is None:
                raise
            raise click.ClickException(hint) from None


@click.group(cls=_Commands)
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
    import os

    from gravimeta.serving import metrics_dir

    created = metrics_dir.prepare()  # first: before anything imports prometheus_client (see metrics_dir)
    master = os.getpid()
    try:
        _serve(settings, bind, workers, threads, timeout, migrate)
    finally:
        metrics_dir.remove(created, owner_pid=master)


def _serve(settings, bind, workers, threads, timeout, migrate) -> None:  # type: ignore[no-untyped-def]
    import os
    import socket
    import uuid

    from gravimeta.api.auth import build_authenticators
    from gravimeta.server import GunicornServer
    from gravimeta.serving import buffering_worker
    from gravimeta.store.database import disabled_for_test
    from gravimeta.store.migrations import check_schema, upgrade
    from gravimeta.store_target import missing_sqlite_file, store_unreachable, upgrade_command

    url = settings.resolved_store_url(create_dir=migrate)
    if not migrate and missing_sqlite_file(url):  # opening it would create an empty file
        click.echo(f"error: no gravimeta store at {missing_sqlite_file(url)}; create it with:\n"
                   f"    {upgrade_command(url)}\nor start with `serve --migrate`", err=True)
        sys.exit(2)
    engine = _engine(url)
    try:
        if migrate:
            upgrade(engine)
        check_schema(engine)
    except SchemaVersionMismatch as exc:
        click.echo(f"error: {exc}", err=True)
        if exc.migratable:
            click.echo(f"migrate it with:\n    {upgrade_command(url)}\nor start with `serve --migrate`", err=True)
        sys.exit(2)
    except Exception as exc:
        reason = store_unreachable(exc)
        if reason is None:
            raise
        if migrate:
            click.echo(f"error: cannot migrate: the store does not answer ({reason})", err=True)
            sys.exit(2)
        # a store that is away must not keep the server down: the workers boot without it, answer 503
        # and report not ready until it answers (gravimeta/api/health.py)
        click.echo(f"warning: the store does not answer ({reason}); serving anyway: requests get 503 and "
                   "/api/health/ready is DOWN until it does", err=True)
    finally:
        engine.dispose()
    try:
        build_authenticators(settings)  # a bad key or algorithm fails here, not in every worker
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    # one replica id for all workers of this server (the node registry tells replicas apart by it)
    os.environ.setdefault("GRAVIMETA_NODE_ID", f"{socket.gethostname()}-{uuid.uuid4().hex[:6]}")
    bind = bind or f"{settings.host}:{settings.port}"
    click.echo(f"gravimeta serving http://{bind}/api on {engine.url.render_as_string(hide_password=True)}")
    options = {
        "bind": bind,
        "workers": workers or settings.workers,
        "threads": threads,
        # gthread, but a thread takes a request only once it has fully arrived (slow or idle clients);
        # TEST-ONLY switch: plain gthread, to show tests/ops/test_slow_clients.py failing without it
        "worker_class": "gthread" if disabled_for_test("request_buffering")
        else buffering_worker.configured(settings.request_timeout_ms / 1000, settings.send_timeout_ms / 1000,
                                         settings.max_unsent_bytes),
        "timeout": timeout,
        # a SIGTERM'd worker finishes its in-flight requests (server.py), for at most this long
        "graceful_timeout": settings.graceful_timeout_s(),
    }
    GunicornServer(settings, options).run()


_DEFAULT_RUN_DIR = "var/cluster"
_RUN_DIR_HELP = ("a `gravimeta cluster` run directory (default var/cluster): without --store-url, use that "
                 "cluster's store; a directory named here that holds no cluster is an error.")


def _engine(url: str):  # type: ignore[no-untyped-def]
    """An engine on `url`; a missing driver is a one-line hint, not a traceback (store_target)."""
    from gravimeta.store_target import StoreTargetError, create_engine_or_hint

    try:
        return create_engine_or_hint(url)
    except StoreTargetError as exc:
        raise click.ClickException(str(exc)) from None


def _existing_store(settings, run_dir: str | None):  # type: ignore[no-untyped-def]
    """The store an operator command means, which must exist and be migrated (store_target). `run_dir`
    None: not given, the default cluster directory if it holds a cluster, else the default store."""
    from pathlib import Path

    from gravimeta.store_target import StoreTargetError, open_existing, resolve

    try:
        target = resolve(settings, Path(run_dir or _DEFAULT_RUN_DIR), run_dir_given=run_dir is not None)
        return target, open_existing(target)
    except StoreTargetError as exc:
        raise click.ClickException(str(exc)) from None


@main.command()
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of a table.")
@click.option("--run-dir", type=click.Path(file_okay=False), help=_RUN_DIR_HELP)
@click.pass_obj
def locks(settings, as_json: bool, run_dir: str | None) -> None:  # type: ignore[no-untyped-def]
    """List the cross-node claims and the registered replicas in the shared database."""
    import json

    from gravimeta.concurrency.node_registry import list_nodes
    from gravimeta.concurrency.reclaimer import live_claims
    from gravimeta.concurrency.replica_safety import revision_text, store_warnings

    target, engine = _existing_store(settings, run_dir)
    try:
        claims, nodes = live_claims(engine), list_nodes(engine)
    finally:
        engine.dispose()
    warnings = store_warnings(nodes)
    if as_json:
        click.echo(json.dumps({"store": target.display, "claims": claims, "nodes": nodes, "warnings": warnings},
                              indent=2))
        return
    click.echo(f"store {target.display} ({target.source})")
    for warning in warnings:
        click.echo(warning)
    click.echo(f"{len(claims)} claim(s)")
    for c in claims:
        state = "live" if c["live"] else "EXPIRED"
        click.echo(f"  {c['path']}  fence={c['fence']}  holder={c['holder']}  expires={c['expires_at']}  {state}")
    click.echo(f"{len(nodes)} worker process(es)")
    for n in nodes:
        flag = "lock ON " if n["lockEnabled"] else "lock OFF"
        click.echo(f"  {n['node']}  {flag} {n['backend']}  revision={revision_text(n['schemaRevision'])}  "
                   f"heartbeat={n['heartbeatAt']}  {'live' if n['live'] else 'gone'}")


@main.group()
def db() -> None:
    """Database schema migrations (Alembic)."""


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True)
@click.pass_obj
def db_upgrade(settings, revision: str) -> None:  # type: ignore[no-untyped-def]
    """Create or migrate the metadata tables."""
    from gravimeta.store.migrations import current_revision, upgrade

    engine = _engine(settings.resolved_store_url())
    before = current_revision(engine)
    upgrade(engine, revision)
    after = current_revision(engine)
    click.echo(f"{engine.url.render_as_string(hide_password=True)}: schema revision {before or 'none'} -> {after}")
    engine.dispose()


@db.command("current")
@click.pass_obj
def db_current(settings) -> None:  # type: ignore[no-untyped-def]
    """Print the database's schema revision and this code's head revision."""
    from gravimeta.store.migrations import current_revision, head_revision

    engine = _engine(settings.resolved_store_url())
    click.echo(f"current: {current_revision(engine) or 'none'}  head: {head_revision()}")
    engine.dispose()


@main.command()
@click.option("--settle-seconds", type=float, default=None,
              help="without cross-node claims: treat intents older than this as final when the engine does not "
                   "show them (default 30).")
@click.option("--list", "list_only", is_flag=True, help="only list the open intents.")
@click.option("--dry-run", "dry_run", is_flag=True,
              help="say what the repair would do with each open intent and why, changing nothing (no claim, no "
                   "barrier, no store or engine write).")
@click.option("--resolve", "resolution", nargs=2, type=(int, click.Choice(["applied", "not-applied"])),
              metavar="ID applied|not-applied",
              help="settle one intent the repair cannot: its change is in the engine (the store takes it) or is "
                   "not (the intent ends); docs/operations.md, 'Stuck intents'.")
@click.option("--discard", "discard_id", type=int, metavar="ID",
              help="end one intent without touching the store or the engine.")
@click.option("--run-dir", type=click.Path(file_okay=False), help=_RUN_DIR_HELP)
@click.pass_obj
def repair(settings, settle_seconds: float | None, list_only: bool, dry_run: bool,  # type: ignore[no-untyped-def]
           resolution: tuple[int, str] | None, discard_id: int | None, run_dir: str | None) -> None:
    """Finish or undo connector operations left open in the operation journal (docs/consistency.md §4).

    Finds the store like `gravimeta locks` (--store-url, else the cluster in --run-dir, else ./var), reads
    the server's configuration (--config, GRAVIMETA_* variables) and refuses to judge any engine when its
    sqlite catalog root is not the one the servers recorded. With --resolve or --discard it settles that
    one intent only; with --dry-run it prints what it would do with each and changes nothing. Exit
    status: 0 when every intent was settled or can wait (or the one intent was resolved, or it was a dry
    run), 1 when some are stuck or failed (listed) or the resolution was refused, 2 when it refused to
    run."""
    import dataclasses
    import os

    from gravimeta.app import build_services
    from gravimeta.dispatch.repair_command import check_engine_roots, print_open, print_preview, resolve

    if sum((list_only, dry_run, resolution is not None, discard_id is not None)) > 1:
        raise click.UsageError("use one of --list, --dry-run, --resolve and --discard")

    target, engine = _existing_store(settings, run_dir)
    engine.dispose()
    if target.sqlite_root:  # the cluster's replicas keep their sqlite catalogs there
        os.environ.setdefault("GRAVIMETA_SQLITE_CATALOG_ROOT", target.sqlite_root)
    click.echo(f"store {target.display} ({target.source})")
    settings = dataclasses.replace(settings, store_url=target.url)
    if target.lock is not None:  # claim like the cluster's replicas do
        settings = dataclasses.replace(settings, distributed_lock_enabled=target.lock[0],
                                       distributed_lock_backend=target.lock[1])
    services = build_services(settings, replica=False)
    try:
        problem = check_engine_roots(services.store.engine)
        if problem is not None and not list_only and discard_id is None:
            click.echo(f"error: {problem}", err=True)
            sys.exit(2)
        if dry_run:
            print_preview(services.reconciler.preview_pending(settle_seconds), click.echo)
            return
        one = resolution if discard_id is None else (discard_id, "discard")
        if one is not None:
            done = resolve(services, one[0], one[1], click.echo)
            print_open(services.reconciler.journal, click.echo)
            sys.exit(0 if done else 1)
        outcomes = None if list_only else services.reconciler.repair_pending(settle_seconds)
        if outcomes is not None:
            click.echo("repair: " + (", ".join(f"{n} {k}" for k, n in sorted(outcomes.items())) or "nothing to do"))
        print_open(services.reconciler.journal, click.echo)
        if outcomes is not None and (outcomes["stuck"] or outcomes["failed"]):
            sys.exit(1)
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
@click.option("--test-mode", is_flag=True, envvar="GRAVIMETA_HIVE_STUB_TEST_MODE",
              help="turn on fault injection (/_faults): for tests only, anyone who can reach the port can crash it.")
def hive_stub_serve(host: str, port: int, data_dir: str, ready_file: str | None, test_mode: bool) -> None:
    """Serve the stub metastore until killed. A test double, not a production metastore."""
    from pathlib import Path

    from connectors.hive_stub.server import serve

    serve(host, port, Path(data_dir), Path(ready_file) if ready_file else None, test_mode)


def _add_owned_commands() -> None:
    """`cluster` and `demo` live in their own modules (gravimeta/cluster.py, gravimeta/demo/)."""
    from gravimeta.cluster import cluster_command
    from gravimeta.demo.commands import demo_command

    main.add_command(cluster_command)
    main.add_command(demo_command)


_add_owned_commands()

if __name__ == "__main__":
    main()
