"""Reading a real `gravitino.conf`: Gravitino's store keys, and keys gravimeta does not know.

Gravitino 1.3 names its relational store with JDBC keys (`gravitino.entity.store.relational.jdbcUrl`,
`jdbcUser`, `jdbcPassword`, `jdbcDriver`). gravimeta used to read only its own
`gravitino.entity.store.relational.url` (a SQLAlchemy URL), so a real gravitino.conf started gravimeta on
an empty embedded SQLite file without a word. Now:

- a PostgreSQL or MySQL/MariaDB JDBC URL becomes the SQLAlchemy URL of the same database (user and
  password from jdbcUser/jdbcPassword, else from the URL's `user`/`password` parameters; of the other
  JDBC parameters only PostgreSQL's `sslmode` carries over, the others are named in a warning);
- a PostgreSQL JDBC URL may list several hosts, as pgjdbc takes them for a failover cluster
  (`jdbc:postgresql://h1:5432,h2:5432/db?targetServerType=primary`): it becomes libpq's multi-host URL
  (`...@/db?host=h1:5432&host=h2:5432&target_session_attrs=read-write`, docs/ha.md). pgjdbc's
  `targetServerType` primary, master (its old name) and preferPrimary become `target_session_attrs=read-write`
  (gravimeta writes on every replica, so a standby is no fallback), `any` is the default; secondary and
  preferSecondary are refused. pgjdbc's `connectTimeout` (seconds) becomes libpq's `connect_timeout`;
- H2 (Gravitino's embedded default) and any other JDBC URL are refused with a message that says what to
  use instead: gravimeta cannot open an H2 file;
- both `…relational.url` and `…relational.jdbcUrl` given is refused (which one was meant?);
- an unknown key in gravimeta's own namespaces (`gravimeta.*`, `gravitino.metadata.distributed-lock.*`)
  is refused, with the closest known key: a misspelt `distributed-lock.enabeld = true` ran with the lock
  OFF. Any other unknown `gravitino.*` key is reported in one warning at start (a real gravitino.conf
  holds many settings of Gravitino's own that have no meaning here), with "did you mean" for near misses.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl

from sqlalchemy.engine import URL

log = logging.getLogger(__name__)

STORE_PREFIX = "gravitino.entity.store.relational."
URL_KEY = STORE_PREFIX + "url"
JDBC_KEYS = tuple(STORE_PREFIX + k for k in ("jdbcUrl", "jdbcUser", "jdbcPassword", "jdbcDriver"))
#: namespaces whose every key gravimeta defines: an unknown key there is a typo, refused
OWN_PREFIXES = ("gravimeta.", "gravitino.metadata.distributed-lock.")
_DRIVERS = {"postgresql": "postgresql+psycopg", "mysql": "mysql+pymysql", "mariadb": "mysql+pymysql"}
_KEPT_PARAMS = {"postgresql": {"sslmode"}, "mysql": set(), "mariadb": set()}
#: pgjdbc's targetServerType -> libpq's target_session_attrs (None: libpq's default, any server)
_TARGET_SERVER = {"any": None, "primary": "read-write", "master": "read-write", "preferprimary": "read-write"}


def jdbc_to_sqlalchemy(jdbc_url: str, user: str | None, password: str | None) -> tuple[str, list[str]]:
    """(SQLAlchemy URL, JDBC parameters left out) for a PostgreSQL or MySQL/MariaDB JDBC URL; ValueError
    for H2 and anything else."""
    raw = jdbc_url.strip()
    lowered = raw.lower()
    if lowered.startswith("jdbc:h2"):
        raise ValueError(f"{JDBC_KEYS[0]} = {raw} is an H2 database (Gravitino's embedded default), which "
                         "gravimeta cannot open. Point jdbcUrl at PostgreSQL or MySQL/MariaDB, or remove the "
                         f"jdbc* keys and set {URL_KEY} (a SQLAlchemy URL; --store-url) or keep the default, "
                         "an embedded SQLite file in $GRAVIMETA_HOME")
    kind = lowered[5:].split(":", 1)[0] if lowered.startswith("jdbc:") else ""
    if kind not in _DRIVERS or not lowered.startswith(f"jdbc:{kind}://"):
        raise ValueError(f"{JDBC_KEYS[0]} = {raw}: gravimeta reads PostgreSQL (jdbc:postgresql://host:port/db) "
                         "and MySQL/MariaDB (jdbc:mysql://… or jdbc:mariadb://…) JDBC URLs; for anything else set "
                         f"{URL_KEY} to a SQLAlchemy URL")
    rest = raw[len(f"jdbc:{kind}://"):]
    rest, _, query = rest.partition("?")
    hostports, _, database = rest.partition("/")
    hosts = [_host_port(raw, h.strip()) for h in hostports.split(",")]
    if len(hosts) > 1 and kind != "postgresql":
        raise ValueError(f"{JDBC_KEYS[0]} = {raw}: give one host[:port] (a failover list is read for PostgreSQL "
                         f"only); or set {URL_KEY} to a SQLAlchemy URL")
    params = dict(parse_qsl(query.replace(";", "&"), keep_blank_values=True))
    user = user or params.pop("user", None) or None
    password = password or params.pop("password", None) or None
    params.pop("user", None)
    params.pop("password", None)
    kept: dict[str, str | tuple[str, ...]] = {k: v for k, v in params.items() if k in _KEPT_PARAMS[kind]}
    if kind == "postgresql":
        kept.update(_failover_params(raw, params))
    left_out = sorted(set(params) - set(kept) - {"targetServerType", "connectTimeout"})
    if len(hosts) > 1:  # libpq's multi-host form, as SQLAlchemy writes it (gravimeta/config.py multi_host_url)
        kept = {"host": tuple(f"{h}:{p}" if p else h for h, p in hosts), **kept}
        url = URL.create(_DRIVERS[kind], username=user, password=password, database=database or None, query=kept)
    else:
        (host, port), = hosts
        url = URL.create(_DRIVERS[kind], username=user, password=password, host=host or None,
                         port=int(port) if port else None, database=database or None, query=kept)
    return url.render_as_string(hide_password=False), left_out


def _host_port(raw: str, hostport: str) -> tuple[str, str]:
    """(host, port or '') of one host of a JDBC URL's host list."""
    if "@" in hostport or not hostport:
        raise ValueError(f"{JDBC_KEYS[0]} = {raw}: give host[:port] (no user in the host, no empty host); "
                         f"or set {URL_KEY} to a SQLAlchemy URL")
    host, _, port = hostport.rpartition(":") if hostport.count(":") == 1 else (hostport, "", "")
    if port and not port.isdigit():
        raise ValueError(f"{JDBC_KEYS[0]} = {raw}: port {port!r} is not a number")
    return host, port


def _failover_params(raw: str, params: dict[str, str]) -> dict[str, str]:
    """libpq's parameters for pgjdbc's targetServerType and connectTimeout (module docstring)."""
    out = {}
    target = params.get("targetServerType")
    if target is not None:
        if target.lower() not in _TARGET_SERVER:
            raise ValueError(f"{JDBC_KEYS[0]} = {raw}: targetServerType={target} would send gravimeta's writes to a "
                             "standby; use targetServerType=primary (gravimeta writes on every replica)")
        attrs = _TARGET_SERVER[target.lower()]
        if attrs is not None:
            out["target_session_attrs"] = attrs
    timeout = params.get("connectTimeout")
    if timeout is not None:
        if not timeout.isdigit():
            raise ValueError(f"{JDBC_KEYS[0]} = {raw}: connectTimeout={timeout} is not a number of seconds")
        out["connect_timeout"] = timeout
    return out


def store_url_from(props: Mapping[str, str]) -> str | None:
    """The SQLAlchemy store URL a properties file names through Gravitino's jdbc* keys (None: it does not)."""
    if JDBC_KEYS[0] not in props:
        others = [k for k in JDBC_KEYS[1:] if props.get(k)]
        if others and URL_KEY not in props:
            log.warning("%s given without %s: ignored; the store is the default or --store-url", ", ".join(others),
                        JDBC_KEYS[0])
        return None
    if URL_KEY in props:
        raise ValueError(f"both {URL_KEY} and {JDBC_KEYS[0]} are set: keep one (url is a SQLAlchemy URL, jdbcUrl "
                         "Gravitino's JDBC URL)")
    url, dropped = jdbc_to_sqlalchemy(props[JDBC_KEYS[0]], props.get(JDBC_KEYS[1]), props.get(JDBC_KEYS[2]))
    if dropped:
        log.warning("%s: JDBC parameters without a meaning for gravimeta's driver were left out: %s", JDBC_KEYS[0],
                    ", ".join(dropped))
    return url


def check_keys(keys: Iterable[str], known: set[str]) -> None:
    """Refuse unknown keys in gravimeta's own namespaces; warn once about other unknown gravitino.* keys."""
    everything = known | {URL_KEY, *JDBC_KEYS}
    refused: list[str] = []
    ignored: list[str] = []
    for key in sorted(keys):
        if key in everything or not key.startswith(("gravitino.", "gravimeta.")):
            continue
        near = difflib.get_close_matches(key, sorted(everything), n=1, cutoff=0.85)
        shown = f"{key} (did you mean {near[0]}?)" if near else key
        (refused if key.startswith(OWN_PREFIXES) else ignored).append(shown)
    if refused:
        raise ValueError("unknown setting(s): " + "; ".join(refused) + ". All settings are listed in the README "
                         "(Configuration)")
    if ignored:
        log.warning("these gravitino.* settings mean nothing to gravimeta and are ignored: %s", "; ".join(ignored))
