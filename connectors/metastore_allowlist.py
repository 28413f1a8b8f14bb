"""Where `hive` catalogs may point: `gravimeta.catalog.hive.allowed-metastores` (environment variable
GRAVIMETA_HIVE_ALLOWED_METASTORES). Without it, a client allowed to create a catalog or test a connection
can make the server open a TCP connection to any host and port it names (`metastore.uris`), from inside
the server's network. Off (empty) by default: any endpoint is allowed, as before.

The setting is a comma-separated list of `host:port` entries; `host` is a name (matched as written in
`metastore.uris`, case-insensitively; no DNS lookup is made here), an IP address, or an IP network in
CIDR form (`10.0.0.0/8`, matching IP literals only), or `*`; `port` is a number or `*`. Read at call time
(the server copies its setting into the environment at start), so it also applies to catalogs created
before it was set: their calls are refused until their `metastore.uris` is changed."""

from __future__ import annotations

import ipaddress
import os

from gravimeta import errors

ENV = "GRAVIMETA_HIVE_ALLOWED_METASTORES"
KEY = "gravimeta.catalog.hive.allowed-metastores"

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _entries(raw: str) -> list[tuple[str | Network, int | None]]:
    entries: list[tuple[str | Network, int | None]] = []
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not host or not (port == "*" or port.isdigit()):
            raise errors.IllegalArgument(f"{KEY} entry {item!r} must look like host:port (port a number or *)")
        host = host.strip("[]").lower()
        target: str | Network = host
        if host != "*":
            try:
                target = ipaddress.ip_network(host, strict=False)
            except ValueError:
                target = host
        entries.append((target, None if port == "*" else int(port)))
    return entries


def allowed(host: str, port: int, raw: str | None = None) -> bool:
    """Whether the setting (`raw`, else the environment) lets a catalog reach host:port."""
    setting = os.environ.get(ENV, "") if raw is None else raw
    if not setting.strip():
        return True
    host = host.strip("[]").lower()
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for target, allowed_port in _entries(setting):
        if allowed_port is not None and allowed_port != port:
            continue
        if target == "*" or target == host:
            return True
        if address is not None and not isinstance(target, str) and address in target:
            return True
    return False


def check(host: str, port: int) -> None:
    """IllegalArgument (400) when the setting does not allow host:port; nothing is sent."""
    if not allowed(host, port):
        raise errors.IllegalArgument(
            f"metastore endpoint {host}:{port} is not allowed on this server (setting {KEY})"
        )
