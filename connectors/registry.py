"""Find a connector class by provider name through the `gravimeta.connectors` entry points, so a
third-party package can add a provider by declaring one entry point."""

from __future__ import annotations

from importlib.metadata import entry_points

from connectors.base import Connector
from gravimeta.errors import IllegalArgument

ENTRY_POINT_GROUP = "gravimeta.connectors"
# Used when the package metadata is not installed (running from a source tree).
_BUILTIN = {
    "memory": "connectors.memory:MemoryConnector",
    "sqlite": "connectors.sqlite:SQLiteCatalogConnector",
    "hive": "connectors.hive:HiveConnector",
    "jdbc-postgresql": "connectors.jdbc.postgresql:PostgreSQLConnector",
    "jdbc-mysql": "connectors.jdbc.mysql:MySQLConnector",
}


class ConnectorRegistry:
    """Provider name -> connector class, loaded lazily and cached."""

    def __init__(self, extra: dict[str, type[Connector]] | None = None):
        self._classes: dict[str, type[Connector]] = dict(extra or {})

    def providers(self) -> list[str]:
        names = {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)} | set(_BUILTIN) | set(self._classes)
        return sorted(names)

    def get(self, provider: str) -> type[Connector]:
        if provider not in self._classes:
            self._classes[provider] = self._load(provider)
        return self._classes[provider]

    def _load(self, provider: str) -> type[Connector]:
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if ep.name == provider:
                return ep.load()
        if provider in _BUILTIN:
            module, _, attr = _BUILTIN[provider].partition(":")
            return getattr(__import__(module, fromlist=[attr]), attr)
        raise IllegalArgument(
            f"Unknown catalog provider '{provider}'; available providers: {', '.join(self.providers())}"
        )
