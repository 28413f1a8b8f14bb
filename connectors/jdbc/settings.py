"""The catalog properties of `jdbc-postgresql` and `jdbc-mysql`, and what they make: a driver URL and a pool.

Gravitino's keys and rules (catalogs/catalog-jdbc-common JdbcCatalogPropertiesMetadata, JdbcConfig,
DataSourceUtils and common/.../JdbcUrlUtils at v1.3.0):

  jdbc-url               required; Gravitino's JDBC URL (jdbc:postgresql://host:port/db?..., jdbc:mysql://host:port/?...)
  jdbc-driver            required; recorded, never loaded (gravimeta talks psycopg 3 and PyMySQL); no H2 driver
  jdbc-database          PostgreSQL: required, the database of the URL (a URL without one connects to it)
  jdbc-user              required; hidden from answers
  jdbc-password          required (may be empty); hidden from answers
  jdbc.pool.min-size     default 2, > 0, at most jdbc.pool.max-size
  jdbc.pool.max-size     default 10, > 0: connections open at once, never more
  jdbc.pool.max-wait-ms  default 30000, > 0: how long a call waits for a free connection
  jdbc.pool.test-on-borrow  default true; hidden, as in Gravitino: a connection is pinged before each use

The JDBC URL becomes the SQLAlchemy URL of the same database by gravimeta/gravitino_conf.py's
jdbc_to_sqlalchemy, the function that reads Gravitino's store URLs (one reading of JDBC URLs, not two):
PostgreSQL keeps `sslmode` and its failover host lists, the other parameters are left out. Parameters
Gravitino refuses as unsafe are refused here too (400, where Gravitino answers a 500), although no
driver here would read them. H2 URLs and drivers are refused as Gravitino refuses them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import unquote

from sqlalchemy.engine import URL, make_url

from connectors.properties import PropertyEntry, java_boolean, java_int, java_long
from gravimeta import errors, gravitino_conf

URL_KEY, DRIVER_KEY, DATABASE_KEY = "jdbc-url", "jdbc-driver", "jdbc-database"
USER_KEY, PASSWORD_KEY = "jdbc-user", "jdbc-password"
MIN_KEY, MAX_KEY, WAIT_KEY, BORROW_KEY = ("jdbc.pool.min-size", "jdbc.pool.max-size", "jdbc.pool.max-wait-ms",
                                          "jdbc.pool.test-on-borrow")
DEFAULT_MIN, DEFAULT_MAX, DEFAULT_WAIT_MS = 2, 10, 30_000

#: JdbcUrlUtils' unsafe parameters, compared in lower case with the decoded URL and every property value
UNSAFE = {
    "postgresql": ("socketfactory", "socketfactoryarg", "sslfactory", "sslhostnameverifier", "sslpasswordcallback",
                   "authenticationpluginclassname"),
    "mysql": ("maxallowedpacket", "autodeserialize", "queryinterceptors", "statementinterceptors",
              "detectcustomcollations", "allowloadlocalinfile", "allowurlinlocalinfile", "allowloadlocalinfileinpath"),
}
#: the JDBC schemes each provider reads
SCHEMES = {"postgresql": ("postgresql",), "mysql": ("mysql", "mariadb")}


def _positive(decode: Callable[[str], int]) -> Callable[[str], int]:
    def check(value: str) -> int:
        number = decode(value)
        if number <= 0:
            raise ValueError("The value must be a positive number")
        return number

    return check


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("The value can't be blank")
    return value


def _driver(value: str) -> str:
    _not_blank(value)
    if value.strip().lower().startswith("org.h2."):
        raise ValueError("H2 JDBC driver is not allowed in catalog configuration")
    return value


def entries(kind: str) -> tuple[PropertyEntry, ...]:
    """The declared properties of the provider for `kind` ('postgresql' or 'mysql')."""
    return (
        PropertyEntry(URL_KEY, "Gravitino's JDBC URL of the engine", required=True,
                      decode=lambda value: parse_url(kind, value)),
        PropertyEntry(DRIVER_KEY, "the JDBC driver class (recorded; gravimeta uses its own driver)", required=True,
                      decode=_driver),
        PropertyEntry(DATABASE_KEY, "the database of the URL", required=kind == "postgresql", decode=_not_blank),
        PropertyEntry(USER_KEY, "the user", required=True, hidden=True, decode=_not_blank),
        PropertyEntry(PASSWORD_KEY, "the password", required=True, hidden=True),
        PropertyEntry(MIN_KEY, f"the least connections in the pool (default {DEFAULT_MIN})",
                      decode=_positive(java_int)),
        PropertyEntry(MAX_KEY, f"the most connections in the pool (default {DEFAULT_MAX})", decode=_positive(java_int)),
        PropertyEntry(WAIT_KEY, f"how long a call waits for a connection (default {DEFAULT_WAIT_MS} ms)",
                      decode=_positive(java_long)),
        PropertyEntry(BORROW_KEY, "ping a connection before each use (default true)", hidden=True,
                      decode=java_boolean),
    )


@dataclass(frozen=True)
class JdbcUrl:
    """A JDBC URL as gravimeta reads it."""

    kind: str  # 'postgresql' or 'mysql' (a jdbc:mariadb URL is 'mysql')
    hosts: tuple[tuple[str, int], ...]
    database: str | None


def parse_url(kind: str, raw: str) -> JdbcUrl:
    """`jdbc-url` for a provider of `kind`; IllegalArgument (ValueError when decoding) when it is not one."""
    text = raw.strip()
    decoded = _decode(text).lower()
    if decoded.startswith("jdbc:h2"):
        raise ValueError("H2 JDBC URL is not allowed in catalog configuration")
    scheme = decoded[5:].split(":", 1)[0] if decoded.startswith("jdbc:") else ""
    if scheme not in SCHEMES[kind] or not decoded.startswith(f"jdbc:{scheme}://"):
        shown = " or ".join(f"jdbc:{s}://host:port" for s in SCHEMES[kind])
        raise ValueError(f"a {'PostgreSQL' if kind == 'postgresql' else 'MySQL'} catalog needs a JDBC URL like {shown}"
                         f"{'/database' if kind == 'postgresql' else ''}")
    _refuse_unsafe(kind, decoded, {})
    url = _sqlalchemy_url(text, None, None)
    hosts = tuple((host, port) for host, port in _hosts(url, 5432 if kind == "postgresql" else 3306))
    return JdbcUrl(kind, hosts, url.database or None)


def _decode(text: str) -> str:
    """URL-decoded up to five times, as JdbcUrlUtils.recursiveDecode (so %2561 cannot hide a parameter)."""
    for _ in range(5):
        decoded = unquote(text)
        if decoded == text:
            break
        text = decoded
    return text


def _refuse_unsafe(kind: str, decoded_url: str, properties: Mapping[str, str]) -> None:
    for name in UNSAFE[kind]:
        if name in decoded_url or any(value.lower() == name for value in properties.values()):
            raise ValueError(f"Unsafe {'PostgreSQL' if kind == 'postgresql' else 'MySQL'} parameter '{name}' detected "
                             "in JDBC URL")


_STORE_HINT = re.compile(r";? or set " + re.escape(gravitino_conf.URL_KEY) + r" to a SQLAlchemy URL")


def _sqlalchemy_url(jdbc_url: str, user: str | None, password: str | None) -> URL:
    """gravitino_conf.jdbc_to_sqlalchemy's URL, its messages speaking of this catalog's property."""
    try:
        rendered, _left_out = gravitino_conf.jdbc_to_sqlalchemy(jdbc_url, user, password)
    except ValueError as exc:
        message = _STORE_HINT.sub("", str(exc)).replace(gravitino_conf.JDBC_KEYS[0], URL_KEY)
        raise ValueError(message) from None
    return make_url(rendered)  # a PostgreSQL host list is libpq's, in `host` parameters


def _hosts(url: URL, default_port: int) -> list[tuple[str, int]]:
    listed = url.query.get("host")
    if listed:
        found = []
        for item in (listed,) if isinstance(listed, str) else listed:
            host, _, port = item.rpartition(":") if item.count(":") == 1 else (item, "", "")
            found.append((host.lower(), int(port) if port else default_port))
        return found
    return [((url.host or "localhost").lower(), url.port or default_port)]


@dataclass(frozen=True)
class Settings:
    """What one catalog's properties make: where to connect and how many connections."""

    kind: str
    url: URL  # the SQLAlchemy URL, with the user and password
    target: JdbcUrl
    database: str | None  # PostgreSQL: the catalog's database
    min_size: int
    max_size: int
    max_wait_s: float
    ping: bool

    def where(self) -> str:
        """host:port[,host:port]/database: how messages name the engine (never with credentials)."""
        hosts = ",".join(f"{host}:{port}" for host, port in self.target.hosts)
        return f"{hosts}/{self.database}" if self.database else hosts


def settings(kind: str, properties: Mapping[str, str]) -> Settings:
    """The settings of a catalog whose properties passed the create checks; IllegalArgument for what
    only the properties together can refuse (the two databases differ, min-size above max-size)."""
    target = parse_url(kind, properties[URL_KEY])
    try:
        _refuse_unsafe(kind, _decode(properties[URL_KEY]).lower(), properties)
    except ValueError as exc:
        raise errors.IllegalArgument(str(exc)) from None
    database = properties.get(DATABASE_KEY)
    if kind == "postgresql":
        if target.database and database and target.database != database:
            raise errors.IllegalArgument(
                f"Catalog property '{DATABASE_KEY}' is '{database}' but '{URL_KEY}' names database "
                f"'{target.database}': give the same database in both")
        database = target.database or database
    minimum = int(properties.get(MIN_KEY, DEFAULT_MIN))
    maximum = int(properties.get(MAX_KEY, DEFAULT_MAX))
    if minimum > maximum:
        raise errors.IllegalArgument(f"Catalog property '{MIN_KEY}' ({minimum}) is greater than '{MAX_KEY}' ({maximum})")
    try:
        url = _sqlalchemy_url(properties[URL_KEY], properties.get(USER_KEY), properties.get(PASSWORD_KEY) or None)
    except ValueError as exc:
        raise errors.IllegalArgument(str(exc)) from None
    if kind == "postgresql":
        url = url.set(database=database)
    return Settings(kind, url, target, database if kind == "postgresql" else None, minimum, maximum,
                    int(properties.get(WAIT_KEY, DEFAULT_WAIT_MS)) / 1000, java_boolean(properties.get(BORROW_KEY, "true")))
