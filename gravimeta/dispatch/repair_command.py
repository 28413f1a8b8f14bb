"""What `gravimeta repair` checks and prints besides the repair itself (gravimeta/cli.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlalchemy import Engine

from connectors import door_guard
from connectors.sqlite.paths import ROOT_ENV, catalog_root
from gravimeta import errors
from gravimeta.dispatch.intent_resolution import IntentResolver
from gravimeta.dispatch.repair_preview import IntentPreview
from gravimeta.store import server_settings
from gravimeta.store.journal import OperationJournal

if TYPE_CHECKING:
    from gravimeta.app import Services


def check_engine_roots(engine: Engine) -> str | None:
    """Why this process must not judge engines (None: it may). Its sqlite catalog root must be the one
    the servers recorded: with another root a catalog's file is missing (or another file is found), and
    a repair would take that for what the engine has."""
    recorded = server_settings.read(engine, server_settings.SQLITE_CATALOG_ROOT)
    mine = str(catalog_root().resolve())
    if recorded is None or recorded == mine:
        return None
    return (f"the sqlite catalog root here is {mine}, but the servers of this database use {recorded}. "
            f"Run `gravimeta repair` with the servers' configuration (--config, {ROOT_ENV} or GRAVIMETA_HOME).")


def print_open(journal: OperationJournal, echo: Callable[[str], object]) -> None:
    for intent in journal.pending():
        echo(f"open: #{intent.id} {intent.operation} {intent.scope_path} {intent.state} "
             f"since {intent.created_at} by {intent.holder}: {intent.detail or ''}")


def print_preview(previews: list[IntentPreview], echo: Callable[[str], object]) -> None:
    """`--dry-run`: per intent, what the repair would do, then what it waits for or does first and why."""
    echo(f"dry run, nothing is changed: {len(previews)} open intent(s)")
    for p in previews:
        echo(f"#{p.id} {p.operation} {p.path} ({p.state}): {p.action}{' (after waiting for a claim)' if p.waits else ''}")
        for line in (*p.first, p.why):
            echo(f"  - {line}")


def resolve(services: Services, intent_id: int, outcome: str, echo: Callable[[str], object]) -> bool:
    """`--resolve ID applied|not-applied` and `--discard ID` (intent_resolution.py); whether it was done
    (a refusal is printed with what to do instead). The engine door's guard is on, as in a request
    (connectors/door_guard.py): a not-applied resolution raises its barrier through the door."""
    reconciler = services.reconciler
    resolver = IntentResolver(services.store, services.coordinator, services.connectors, reconciler.journal,
                              reconciler.repairer)
    try:
        with door_guard.serving():
            echo(resolver.resolve(intent_id, outcome))
    except errors.GravitinoError as exc:
        echo(f"error: {exc.message}")
        return False
    return True
