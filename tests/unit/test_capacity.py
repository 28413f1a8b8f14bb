"""gravimeta/capacity.py states what the store's columns hold; these tests keep it in step with the
models and the migration that creates the columns, and check its text rule."""

from __future__ import annotations

import sqlalchemy as sa

from gravimeta import capacity
from gravimeta.store import models

ENTITIES = (models.MetalakeRow, models.CatalogRow, models.SchemaRow, models.TableRow)


def test_name_and_user_lengths_match_the_models():
    for row in (*ENTITIES, models.ColumnRow):
        assert row.__table__.c.name.type.length == capacity.NAME_CHARS, row
    for row in ENTITIES:
        for column in ("creator", "last_modifier"):
            assert row.__table__.c[column].type.length == capacity.USER_CHARS, (row, column)


def test_comments_are_text_and_json_values_are_json_text_columns():
    for row in (*ENTITIES, models.ColumnRow):
        assert isinstance(row.__table__.c.comment.type, sa.Text), row
        assert capacity.TEXT_BYTES == 2**16 - 1  # MySQL/MariaDB TEXT
    assert capacity.JSON_BYTES <= 2**23  # half of MEDIUMTEXT (2**24 - 1 bytes) and of max_allowed_packet (16 MiB)


def test_the_migration_creates_the_columns_capacity_describes():
    source = open(models.__file__.replace("gravimeta/store/models.py", "alembic/versions/0001_metadata_tree.py")).read()
    assert f"sa.String({capacity.NAME_CHARS})" in source
    assert f'sa.Column("creator", sa.String({capacity.USER_CHARS}))' in source
    assert f'sa.Column("last_modifier", sa.String({capacity.USER_CHARS}))' in source


def test_only_nul_and_lone_surrogates_are_unstorable():
    assert capacity.unstorable_character("plain, \u00e9, \N{GRINNING FACE}, \x01, \ufffe") is None
    assert "NUL" in (capacity.unstorable_character("a\x00") or "")
    assert "U+DFFF" in (capacity.unstorable_character("a\udfff") or "")
