"""Catalog property metadata, with Gravitino's rules (core/.../connector/PropertyEntry.java,
PropertiesMetadata.java and core/.../catalog/PropertiesMetadataHelpers.java at v1.3.0).

A provider declares PropertyEntry items; every other key is stored as given. The declared keys carry:
  required   must be present on create (a prefix entry: some key must start with it);
  immutable  cannot be set or removed by an alter;
  reserved   cannot be given at all (the server owns it); reserved implies immutable;
  hidden     kept out of every answer that shows the catalog (Gravitino's BaseCatalog.properties()): the
             base entries below are reserved too, so no request can store them; a provider's own hidden
             entries (jdbc-user, jdbc-password) are set by requests and used by the connector, never shown;
  decode     the value check: it raises on a bad value (Gravitino decodes with Integer.parseInt,
             Boolean.valueOf, an enum's valueOf, ...).
A key matches its exact entry, else the longest prefix entry that it starts with.

One rule is stricter than Gravitino's: an alter may not remove a required property (Gravitino allows it,
and the catalog then fails on every later use until the property is set again).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from gravimeta.errors import IllegalArgument

Decoder = Callable[[str], object]

_JAVA_INT_MIN, _JAVA_INT_MAX = -(2**31), 2**31 - 1
_JAVA_LONG_MIN, _JAVA_LONG_MAX = -(2**63), 2**63 - 1


def _java_integer(low: int, high: int) -> Callable[[str], int]:
    def decode(value: str) -> int:
        # Integer.parseInt: an optional sign and ASCII digits, nothing else (no spaces, no '_')
        body = value[1:] if value[:1] in "+-" else value
        if not body or not body.isascii() or not body.isdigit():
            raise ValueError(f"not an integer: {value!r}")
        number = int(value)
        if not low <= number <= high:
            raise ValueError(f"{value} is out of range")
        return number

    return decode


java_int = _java_integer(_JAVA_INT_MIN, _JAVA_INT_MAX)
java_long = _java_integer(_JAVA_LONG_MIN, _JAVA_LONG_MAX)


def java_boolean(value: str) -> bool:
    """Boolean.valueOf: "true" in any case is true, anything else false; it never fails."""
    return value.lower() == "true"


def one_of(*choices: str) -> Decoder:
    """An enum property: case-insensitive, like Gravitino's enumPropertyEntry."""

    def decode(value: str) -> str:
        if value.upper() not in {c.upper() for c in choices}:
            raise ValueError(f"Invalid value [{value}]. Valid values: [{', '.join(c.lower() for c in choices)}]")
        return value.lower()

    return decode


@dataclass(frozen=True)
class PropertyEntry:
    """One declared catalog property."""

    name: str
    description: str = ""
    required: bool = False
    immutable: bool = False
    reserved: bool = False
    hidden: bool = False
    prefix: bool = False
    decode: Decoder | None = None

    def __post_init__(self) -> None:
        # Gravitino's PropertyEntry constructor checks the same
        assert not (self.required and self.reserved), f"{self.name}: a required property cannot be reserved"
        assert not self.reserved or self.immutable, f"{self.name}: a reserved property must be immutable"


# Gravitino's BasePropertiesMetadata and BaseCatalogPropertiesMetadata entries: every catalog has them.
BASE_CATALOG_ENTRIES: tuple[PropertyEntry, ...] = (
    PropertyEntry("gravitino.identifier", "the id Gravitino gives an entity", immutable=True, reserved=True, hidden=True),
    PropertyEntry("package", "path of the catalog's classes and resources", immutable=True),
    PropertyEntry("ops-impl", "class of a custom catalog operation implementation", immutable=True),
    PropertyEntry("authorization-provider", "name of the authorization provider", immutable=True),
    PropertyEntry("cloud.name", "the cloud the catalog runs on", decode=one_of("AWS", "AZURE", "GCP", "ON_PREMISE", "OTHER")),
    PropertyEntry("cloud.region-code", "the region code of that cloud"),
    PropertyEntry("in-use", "whether the catalog is enabled (PATCH it)", immutable=True, reserved=True,
                  decode=java_boolean),
    PropertyEntry("metalake-in-use", "whether the catalog's metalake is enabled", immutable=True, reserved=True,
                  hidden=True, decode=java_boolean),
)


class CatalogProperties:
    """A provider's declared entries (its own plus BASE_CATALOG_ENTRIES) and the checks on them."""

    def __init__(self, entries: Iterable[PropertyEntry]):
        self.entries: dict[str, PropertyEntry] = {}
        for entry in (*entries, *BASE_CATALOG_ENTRIES):
            assert entry.name not in self.entries, f"property {entry.name} declared twice"
            self.entries[entry.name] = entry

    def entry(self, key: str) -> PropertyEntry | None:
        """The exact (non-prefix) entry of `key`, else the longest prefix entry it starts with."""
        exact = self.entries.get(key)
        if exact is not None and not exact.prefix:
            return exact
        prefixes = [e for e in self.entries.values() if e.prefix and key.startswith(e.name)]
        return max(prefixes, key=lambda e: len(e.name), default=None)

    def shown(self, properties: Mapping[str, str]) -> dict[str, str]:
        """`properties` without the hidden ones: what an answer shows of a catalog."""
        return {k: v for k, v in properties.items() if not ((e := self.entry(k)) is not None and e.hidden)}

    def validate_create(self, properties: Mapping[str, str]) -> None:
        """PropertiesMetadataHelpers.validatePropertyForCreate: no reserved key, every required one,
        every declared value decodable."""
        reserved = [k for k in properties if (e := self.entry(k)) is not None and e.reserved]
        if reserved:
            raise IllegalArgument(f"Properties or property prefixes are reserved and cannot be set: {_list(reserved)}")
        absent = [e.name for e in self.entries.values() if e.required and not _present(e, properties)]
        if absent:
            raise IllegalArgument(f"Properties or property prefixes are required and must be set: {_list(absent)}")
        for key, value in properties.items():
            self._check_value(key, value)

    def validate_alter(self, upserts: Mapping[str, str], deletes: Iterable[str], after: Mapping[str, str]) -> None:
        """PropertiesMetadataHelpers.validatePropertyForAlter (no immutable or reserved key is set or
        removed; set values decode), and no required property is left out of `after`."""
        for key, value in upserts.items():
            entry = self.entry(key)
            if entry is not None:
                if entry.immutable or entry.reserved:
                    raise IllegalArgument(f"Property {key} is immutable or reserved, cannot be set")
                self._check_value(key, value)
        for key in deletes:
            entry = self.entry(key)
            if entry is not None and (entry.immutable or entry.reserved):
                raise IllegalArgument(f"Property {key} is immutable or reserved, cannot be deleted")
        absent = [e.name for e in self.entries.values() if e.required and not _present(e, after)]
        if absent:
            raise IllegalArgument(f"Properties or property prefixes are required and cannot be removed: {_list(absent)}")

    def _check_value(self, key: str, value: str) -> None:
        entry = self.entry(key)
        if entry is None or entry.decode is None:
            return
        try:
            entry.decode(value)
        except (ValueError, IllegalArgument) as exc:
            reason = exc.message if isinstance(exc, IllegalArgument) else str(exc)
            raise IllegalArgument(f"Invalid value: '{value}' for property: '{key}' ({reason})") from None


def _present(entry: PropertyEntry, properties: Mapping[str, str]) -> bool:
    if entry.prefix:
        return any(k.startswith(entry.name) for k in properties)
    return entry.name in properties


def _list(keys: Iterable[str]) -> str:
    return "[" + ", ".join(keys) + "]"
