"""Typed settings: defaults here, then a Gravitino-style `key = value` properties file, then
`GRAVIMETA_*` environment variables (highest priority). Every key is listed once, in SETTINGS."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

DEFAULT_DATA_DIR = Path(os.environ.get("GRAVIMETA_HOME", Path.cwd() / "var"))


def _bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {value!r}")


@dataclass
class Settings:
    """Settings of one server; field metadata holds the properties key and the environment variable."""

    store_url: str = field(
        default="", metadata={"key": "gravitino.entity.store.relational.url", "env": "GRAVIMETA_STORE_URL"}
    )
    host: str = field(
        default="127.0.0.1", metadata={"key": "gravitino.server.webserver.host", "env": "GRAVIMETA_HOST"}
    )
    port: int = field(
        default=8090, metadata={"key": "gravitino.server.webserver.httpPort", "env": "GRAVIMETA_PORT"}
    )
    workers: int = field(default=2, metadata={"key": "gravimeta.server.workers", "env": "GRAVIMETA_WORKERS"})
    distributed_lock_enabled: bool = field(
        default=False,
        metadata={"key": "gravitino.metadata.distributed-lock.enabled", "env": "GRAVIMETA_DISTRIBUTED_LOCK"},
    )
    distributed_lock_backend: str = field(
        default="AUTO",
        metadata={
            "key": "gravitino.metadata.distributed-lock.backend",
            "env": "GRAVIMETA_DISTRIBUTED_LOCK_BACKEND",
        },
    )
    lease_ttl_ms: int = field(
        default=15000,
        metadata={"key": "gravitino.metadata.distributed-lock.lease-ttl-ms", "env": "GRAVIMETA_LEASE_TTL_MS"},
    )
    claim_timeout_ms: int = field(
        default=10000,
        metadata={
            "key": "gravitino.metadata.distributed-lock.acquire-timeout-ms",
            "env": "GRAVIMETA_CLAIM_TIMEOUT_MS",
        },
    )
    # the database ends a store session idle inside a transaction this long (docs/ha.md, "Bounded waits");
    # -1: 4 x lease-ttl-ms; 0: never
    idle_transaction_timeout_ms: int = field(
        default=-1,
        metadata={"key": "gravimeta.store.idle-transaction-timeout-ms", "env": "GRAVIMETA_IDLE_TRANSACTION_TIMEOUT_MS"},
    )
    # how long a client may take to send its whole request (gravimeta/serving/buffering_worker.py)
    request_timeout_ms: int = field(
        default=10000, metadata={"key": "gravimeta.server.request-timeout-ms", "env": "GRAVIMETA_REQUEST_TIMEOUT_MS"}
    )
    # answers are written by the worker's event loop as the client reads them (buffering_worker.py): a client
    # that accepts none of its answer for this long is disconnected
    send_timeout_ms: int = field(
        default=30000, metadata={"key": "gravimeta.server.send-timeout-ms", "env": "GRAVIMETA_SEND_TIMEOUT_MS"}
    )
    # the unsent answers one worker holds at most; beyond, the connections that took nothing the longest go
    max_unsent_bytes: int = field(
        default=64 * 1024 * 1024,
        metadata={"key": "gravimeta.server.max-unsent-bytes", "env": "GRAVIMETA_MAX_UNSENT_BYTES"},
    )
    # how long a SIGTERM'd worker may finish its in-flight requests before it is killed (gunicorn's
    # graceful timeout, in whole seconds, rounded up); a request stuck longer is ended with the worker
    graceful_timeout_ms: int = field(
        default=30000, metadata={"key": "gravimeta.server.graceful-timeout-ms", "env": "GRAVIMETA_GRACEFUL_TIMEOUT_MS"}
    )
    # how often each worker settles the operation journal's intents left open by operations that did not
    # finish (gravimeta/dispatch/background_repair.py); 0: never (the next operation on the scope, or
    # `gravimeta repair`, does it then)
    journal_repair_interval_ms: int = field(
        default=60000,
        metadata={"key": "gravimeta.journal.repair-interval-ms", "env": "GRAVIMETA_JOURNAL_REPAIR_INTERVAL_MS"},
    )
    max_content_length: int = field(
        default=1024 * 1024,
        metadata={"key": "gravimeta.server.max-request-bytes", "env": "GRAVIMETA_MAX_REQUEST_BYTES"},
    )
    # input limits (docs/hardening.md): Gravitino's relational store has VARCHAR(256) comment columns
    max_comment_chars: int = field(
        default=256, metadata={"key": "gravimeta.limits.comment-max-chars", "env": "GRAVIMETA_MAX_COMMENT_CHARS"}
    )
    max_properties: int = field(
        default=1000, metadata={"key": "gravimeta.limits.properties-max-count", "env": "GRAVIMETA_MAX_PROPERTIES"}
    )
    max_property_key_chars: int = field(
        default=512,
        metadata={"key": "gravimeta.limits.property-key-max-chars", "env": "GRAVIMETA_MAX_PROPERTY_KEY_CHARS"},
    )
    max_property_value_chars: int = field(
        default=65536,
        metadata={"key": "gravimeta.limits.property-value-max-chars", "env": "GRAVIMETA_MAX_PROPERTY_VALUE_CHARS"},
    )
    # caps on roles (gravimeta/roles/limits.py): securable objects per role, roles per user or group
    max_role_securable_objects: int = field(
        default=1000, metadata={"key": "gravimeta.limits.role-securable-objects-max-count",
                                "env": "GRAVIMETA_MAX_ROLE_SECURABLE_OBJECTS"}
    )
    max_principal_roles: int = field(
        default=1000, metadata={"key": "gravimeta.limits.principal-roles-max-count",
                                "env": "GRAVIMETA_MAX_PRINCIPAL_ROLES"}
    )
    # authentication and the service admins (gravimeta/api/auth.py); empty = no authentication
    # Gravitino's default: `simple` (the Basic user name, anonymous without credentials); "" turns it off
    authenticators: str = field(
        default="simple", metadata={"key": "gravitino.authenticators", "env": "GRAVIMETA_AUTHENTICATORS"}
    )
    simple_allow_anonymous: bool = field(
        default=True,
        metadata={"key": "gravimeta.authenticator.simple.allowAnonymous", "env": "GRAVIMETA_SIMPLE_ALLOW_ANONYMOUS"},
    )
    oauth_sign_key: str = field(
        default="",
        metadata={"key": "gravitino.authenticator.oauth.defaultSignKey", "env": "GRAVIMETA_OAUTH_SIGN_KEY"},
    )
    oauth_algorithm: str = field(
        default="RS256",
        metadata={"key": "gravitino.authenticator.oauth.signAlgorithmType", "env": "GRAVIMETA_OAUTH_ALGORITHM"},
    )
    oauth_audience: str = field(
        default="GravitinoServer",
        metadata={"key": "gravitino.authenticator.oauth.serviceAudience", "env": "GRAVIMETA_OAUTH_AUDIENCE"},
    )
    oauth_allow_skew_s: int = field(
        default=0,
        metadata={"key": "gravitino.authenticator.oauth.allowSkewSecs", "env": "GRAVIMETA_OAUTH_ALLOW_SKEW_SECS"},
    )
    oauth_allow_tokens_without_exp: bool = field(
        default=False,
        metadata={"key": "gravimeta.authenticator.oauth.allowTokensWithoutExp",
                  "env": "GRAVIMETA_OAUTH_ALLOW_TOKENS_WITHOUT_EXP"},
    )
    oauth_principal_fields: str = field(
        default="sub",
        metadata={"key": "gravitino.authenticator.oauth.principalFields", "env": "GRAVIMETA_OAUTH_PRINCIPAL_FIELDS"},
    )
    service_admins: str = field(
        default="", metadata={"key": "gravitino.authorization.serviceAdmins", "env": "GRAVIMETA_SERVICE_ADMINS"}
    )
    # owners decide who may alter, disable or drop (gravimeta/ownership); needs service admins, as in Gravitino
    authorization_enabled: bool = field(
        default=False,
        metadata={"key": "gravitino.authorization.enable", "env": "GRAVIMETA_AUTHORIZATION_ENABLE"},
    )
    # where `hive` catalogs may point (metastore.uris and connection tests): host:port entries; empty: anywhere
    hive_allowed_metastores: str = field(
        default="",
        metadata={"key": "gravimeta.catalog.hive.allowed-metastores", "env": "GRAVIMETA_HIVE_ALLOWED_METASTORES"},
    )
    # where the `sqlite` provider keeps its catalog files; empty: $GRAVIMETA_HOME/sqlite-catalogs
    sqlite_catalog_root: str = field(
        default="", metadata={"key": "gravimeta.catalog.sqlite.root", "env": "GRAVIMETA_SQLITE_CATALOG_ROOT"}
    )

    def idle_transaction_timeout(self) -> int:
        """The idle-in-transaction timeout in ms for the store's sessions (0: none): the setting, or by
        default four lease TTLs, long past any healthy transaction, short enough that a frozen holder's
        rows come free within a few TTLs instead of hours."""
        if self.idle_transaction_timeout_ms < 0:
            return 4 * self.lease_ttl_ms
        return self.idle_transaction_timeout_ms

    def graceful_timeout_s(self) -> int:
        """gunicorn's graceful_timeout (whole seconds, at least 1) from graceful-timeout-ms."""
        return max(1, math.ceil(self.graceful_timeout_ms / 1000))

    def resolved_store_url(self, create_dir: bool = True) -> str:
        """The store URL, defaulting to an embedded SQLite file under GRAVIMETA_HOME (./var), whose
        directory is created unless `create_dir` is False (a command that must not create a store)."""
        if self.store_url:
            return self.store_url
        if create_dir:
            DEFAULT_DATA_DIR.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{DEFAULT_DATA_DIR / 'gravimeta.db'}"


def read_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """Parse a Java-style properties file: `key = value` or `key: value`, `#`/`!` comments."""
    result: dict[str, str] = {}
    for raw in Path(path).read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if sep < 0:
            raise ValueError(f"{path}: line without '=': {raw!r}")
        result[line[:sep].strip()] = line[sep + 1 :].strip()
    return result


def load_settings(
    properties_file: str | os.PathLike[str] | None = None,
    environ: dict[str, str] | None = None,
    **overrides: Any,
) -> Settings:
    """Build Settings from defaults, the properties file, the environment, then explicit overrides."""
    env = os.environ if environ is None else environ
    properties_file = properties_file or env.get("GRAVIMETA_CONFIG")
    props = read_properties(properties_file) if properties_file else {}
    values: dict[str, Any] = {}
    if props:  # Gravitino's own keys and typos (gravimeta/gravitino_conf.py)
        from gravimeta import gravitino_conf

        gravitino_conf.check_keys(props, {f.metadata["key"] for f in fields(Settings)})
        if env.get("GRAVIMETA_STORE_URL") is None and overrides.get("store_url") is None:
            jdbc_store = gravitino_conf.store_url_from(props)
            if jdbc_store is not None:
                values["store_url"] = jdbc_store
    for f in fields(Settings):
        raw = env.get(f.metadata["env"], props.get(f.metadata["key"]))
        if raw is not None:
            values[f.name] = _convert(f.type, raw, f.metadata["key"])
    values.update({k: v for k, v in overrides.items() if v is not None})
    settings = Settings(**values)
    settings.store_url = multi_host_url(settings.store_url)
    settings.distributed_lock_backend = settings.distributed_lock_backend.upper()
    if settings.distributed_lock_backend not in ("LEASE_TABLE", "PG_ADVISORY", "AUTO"):
        raise ValueError(
            "gravitino.metadata.distributed-lock.backend must be LEASE_TABLE, PG_ADVISORY or AUTO, "
            f"not {settings.distributed_lock_backend!r}"
        )
    if settings.graceful_timeout_ms <= 0:
        raise ValueError("gravimeta.server.graceful-timeout-ms must be a positive number of milliseconds, "
                         f"not {settings.graceful_timeout_ms}")
    for key, value in (("gravimeta.server.send-timeout-ms", settings.send_timeout_ms),
                       ("gravimeta.server.max-unsent-bytes", settings.max_unsent_bytes)):
        if value <= 0:
            raise ValueError(f"{key} must be a positive number, not {value}")
    if settings.journal_repair_interval_ms < 0:
        raise ValueError("gravimeta.journal.repair-interval-ms must be 0 (off) or a positive number of "
                         f"milliseconds, not {settings.journal_repair_interval_ms}")
    for name in filter(None, (n.strip().lower() for n in settings.authenticators.split(","))):
        if name not in ("simple", "oauth"):
            raise ValueError(f"gravitino.authenticators: unknown authenticator {name!r}; use simple and/or oauth")
    check_authorization(settings)
    return settings


_MULTI_HOST = re.compile(r"^(?P<scheme>postgresql[^:/]*)://(?:(?P<auth>[^@/]*)@)?(?P<hosts>[^/?@]*,[^/?@]*)(?P<rest>[/?].*)?$")


def multi_host_url(url: str) -> str:
    """libpq's multi-host form, `postgresql+psycopg://u:p@h1:5432,h2:5432/db?target_session_attrs=read-write`
    (every member of a failover cluster; libpq connects to the first that answers as asked), in the form
    SQLAlchemy parses: `postgresql+psycopg://u:p@/db?host=h1:5432&host=h2:5432&target_session_attrs=...`.
    Any other URL comes back unchanged."""
    match = _MULTI_HOST.match(url)
    if match is None:
        return url
    hosts = "&".join(f"host={h.strip()}" for h in match["hosts"].split(",") if h.strip())
    path, _, query = (match["rest"] or "/").partition("?")
    auth = f"{match['auth']}@" if match["auth"] is not None else ""
    return f"{match['scheme']}://{auth}{path or '/'}?{hosts}" + (f"&{query}" if query else "")


def service_admins(settings: Settings) -> frozenset[str]:
    """The users of gravitino.authorization.serviceAdmins."""
    return frozenset(a.strip() for a in settings.service_admins.split(",") if a.strip())


def check_authorization(settings: Settings) -> None:
    """Gravitino will not start with authorization on and no service admin (nobody could create a
    metalake); neither does gravimeta."""
    if settings.authorization_enabled and not service_admins(settings):
        raise ValueError("gravitino.authorization.enable=true needs gravitino.authorization.serviceAdmins")


def _convert(type_name: Any, raw: str, key: str) -> Any:
    try:
        if type_name in (bool, "bool"):
            return _bool(raw)
        if type_name in (int, "int"):
            return int(raw)
    except ValueError as exc:
        raise ValueError(f"bad value for {key}: {exc}") from None
    return raw
