"""What the metadata store's columns can hold, on every backend, and the text rules every stored string
obeys. The edge (gravimeta/api/input_rules.py, api/limits.py) refuses anything beyond these with a 400
before any engine or store change, so no value a request carries can make a store write fail halfway
(a failed write after an engine call is the "poison pill" of docs/consistency.md).

The numbers are those of alembic/versions/0001 (tests/unit/test_capacity.py checks them against the
models and the migration): names VARCHAR(128), audit users VARCHAR(256), comments TEXT (65,535 bytes on
MySQL/MariaDB), JSON values MEDIUMTEXT on MySQL/MariaDB (16 MiB - 1 byte); PostgreSQL and SQLite have no
smaller bound for TEXT. Lengths of VARCHAR columns count characters on every backend (utf8mb4 on MySQL).
JSON values are held to half of MEDIUMTEXT: one statement must also fit MariaDB's default
max_allowed_packet (16 MiB), and a table row or a journal row carries several JSON values at once.

Text: PostgreSQL cannot store NUL (U+0000) in any text value, and no backend can store a lone surrogate
(U+D800-U+DFFF, which JSON's `\\ud800` escapes can produce but UTF-8 cannot encode), so both are refused
everywhere, on every backend alike.
"""

from __future__ import annotations

import json
import re
from typing import Any

from gravimeta.errors import IllegalArgument

NAME_CHARS = 128  # gm_metalake/gm_catalog/gm_schema/gm_table/gm_column.name
USER_CHARS = 256  # creator, last_modifier of every entity
TEXT_BYTES = 65_535  # comment columns: TEXT on MySQL/MariaDB
JSON_BYTES = 8 * 1024 * 1024  # properties, journal entries...: MEDIUMTEXT (16 MiB) on MySQL/MariaDB

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def unstorable_character(text: str) -> str | None:
    """A description of the first character of `text` no store can hold (NUL or a lone surrogate),
    or None when every character is storable."""
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    char = found.group()
    if char == "\x00":
        return "a NUL character (U+0000)"
    return f"a lone surrogate (U+{ord(char):04X}), which is not Unicode text"


def check_json_size(value: Any, what: str) -> None:
    """IllegalArgument when `value`, as JSON, is larger than a JSON column holds. Measured with every
    non-ASCII character escaped, the largest form any part of gravimeta writes (the journal's), so a
    value that passes fits everywhere it is stored. Properties grow by alters, one request at a time,
    so the request size limit alone does not bound them."""
    size = len(json.dumps(value))
    if size > JSON_BYTES:
        raise IllegalArgument(
            f"{what} would take {size} bytes as JSON; the metadata store holds at most {JSON_BYTES} bytes there"
        )
