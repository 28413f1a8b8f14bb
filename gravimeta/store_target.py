"""Which store an operator command works on, and refusing the wrong one.

`gravimeta locks` and `gravimeta repair` inspect or change a store that servers already use. Looking
at the wrong one is worse than failing: `locks` on an empty ./var/gravimeta.db reports "0 claims" while
a cluster holds dozens, and a store opened by mistake must not be created or migrated on the way. So:

- the store is, in order: --store-url (or GRAVIMETA_STORE_URL / the properties file), else the store of
  the `gravimeta cluster` whose state is in --run-dir (as `cluster status` and `demo race` find it),
  else the embedded default ./var/gravimeta.db; a --run-dir the operator names that holds no cluster's
  state is refused (it was stopped, or is another directory), never replaced by the default;
- a SQLite file that does not exist is refused before anything opens it (opening would create it);
  a server database that does not exist, or does not answer, is refused with the driver's reason;
  a database not at this code's schema revision is refused (SchemaVersionMismatch);
- a missing driver (psycopg for PostgreSQL, PyMySQL for MariaDB/MySQL) is a one-line hint naming the
  extra to install, not a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from sqlalchemy.exc import InterfaceError, OperationalError

from gravimeta.config import DEFAULT_DATA_DIR, Settings
from gravimeta.errors import SchemaVersionMismatch

#: the module a dialect's driver needs -> the extra that installs it
DRIVER_EXTRAS = {"psycopg": ("PostgreSQL", "postgres"), "pymysql": ("MariaDB/MySQL", "mysql")}


class StoreTargetError(Exception):
    """The command cannot use the store; the message says which store and what to do."""


@dataclass(frozen=True)
class StoreTarget:
    url: str
    #: where the URL came from: "--store-url", "cluster <run-dir>" or "default"
    source: str
    #: from a cluster's state: its shared sqlite catalog root and its distributed-lock setting, which a
    #: command that changes the store (repair) must share with the running replicas
    sqlite_root: str | None = None
    lock: tuple[bool, str] | None = None

    @property
    def display(self) -> str:
        return make_url(self.url).render_as_string(hide_password=True)


def resolve(settings: Settings, run_dir: Path, run_dir_given: bool = False) -> StoreTarget:
    """The store an operator command means (module docstring). `run_dir_given`: the operator named the
    run directory (--run-dir); one without a cluster's state is then an error, not a reason to fall back
    to ./var (after `cluster stop` that fallback reported the empty default store as if it were the
    cluster's)."""
    if settings.store_url:
        return StoreTarget(settings.store_url, "--store-url")
    from gravimeta.cluster_state import ClusterState

    state = ClusterState.load(run_dir)
    if state is not None:
        return StoreTarget(state.store_url, f"cluster {run_dir}", state.sqlite_root, (state.lock, state.backend))
    if run_dir_given:
        raise StoreTargetError(f"no cluster in {run_dir} (no state.json: it was stopped or never started there); "
                               "give --store-url to name its store")
    return StoreTarget(f"sqlite:///{DEFAULT_DATA_DIR / 'gravimeta.db'}", "default")


def open_existing(target: StoreTarget) -> Engine:
    """An engine on the target store, which must exist, answer and be at this code's revision."""
    from gravimeta.store.migrations import check_schema

    if missing_sqlite_file(target.url):
        raise StoreTargetError(f"no gravimeta store at {target.display} ({target.source}); give --store-url, "
                               "or start one (`gravimeta db upgrade` creates it)")
    engine = create_engine_or_hint(target.url)
    try:
        check_schema(engine)
    except SchemaVersionMismatch as exc:
        engine.dispose()
        raise StoreTargetError(f"{exc} ({target.source})") from None
    except Exception as exc:
        engine.dispose()
        reason = store_unreachable(exc)
        if reason is None:
            raise
        raise StoreTargetError(f"the store {target.display} ({target.source}) does not answer: {reason}") from None
    return engine


def missing_sqlite_file(url: str) -> str | None:
    """The displayed URL when `url` is a SQLite file that does not exist (opening it would create an
    empty one); None otherwise."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return None
    database = parsed.database or ""
    if database not in ("", ":memory:") and Path(database).is_file():
        return None
    return parsed.render_as_string(hide_password=True)


def upgrade_command(url: str) -> str:
    """The exact command that migrates this store (the password shown as ***: type it in)."""
    import shlex

    return f"gravimeta --store-url {shlex.quote(make_url(url).render_as_string(hide_password=True))} db upgrade"


def create_engine_or_hint(url: str) -> Engine:
    """create_store_engine, with a missing driver turned into a hint naming the extra to install."""
    from gravimeta.store.database import create_store_engine

    try:
        return create_store_engine(url)
    except ModuleNotFoundError as exc:
        hint = missing_driver_hint(exc)
        if hint is None:
            raise
        raise StoreTargetError(hint) from None


def missing_driver_hint(exc: ModuleNotFoundError) -> str | None:
    """The one-line hint for a database driver that is not installed (the extra that brings it); None
    when the missing module is not a driver of ours."""
    root = (exc.name or "").split(".")[0]
    if root not in DRIVER_EXTRAS:
        return None
    what, extra = DRIVER_EXTRAS[root]
    return f"the {what} driver ({root}) is not installed; install it with: pip install 'gravimeta[{extra}]'"


def store_unreachable(exc: BaseException) -> str | None:
    """The driver's one-line reason when `exc` says the store cannot be reached or refused the
    connection; None for any other error."""
    if isinstance(exc, OperationalError | InterfaceError):
        lines = str(exc.orig).strip().splitlines()
        return lines[0] if lines else type(exc.orig).__name__
    return None
