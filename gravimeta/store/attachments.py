"""What a drop of tree rows takes with it: their tag associations, and a dropped metalake's tags.

The EntityStore calls these from its cascades, inside the drop's transaction, after it has locked the
rows it deletes FOR UPDATE and before it deletes them. So a tag association committed before the lock
(its transaction held the object row FOR SHARE: gravimeta/store/tags.py) is seen and deleted here, and
one attempted after the drop committed finds no row to attach to. Nothing can be left pointing at an
id that no longer exists, whichever replica ran which part of the race. (A table's statistics and
store-kept partitions need no call here: their foreign keys delete them with the table, ON DELETE
CASCADE, in the same statement and transaction.)
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, bindparam, delete, or_, select
from sqlalchemy.orm import Session

from gravimeta.store.attached_models import TagRelationRow, TagRow
from gravimeta.store.models import ColumnRow


def _untag(s: Session, kind: str, ids: Any) -> None:
    s.execute(delete(TagRelationRow).where(TagRelationRow.object_type == kind, TagRelationRow.object_id.in_(ids))
              .execution_options(synchronize_session=False))


def columns_dropped(s: Session, column_ids: list[int]) -> None:
    """Columns removed from a table (an alter's deleteColumn, or their table's drop)."""
    if column_ids:
        _untag(s, "column", column_ids)


def tables_dropped(s: Session, table_ids: list[int]) -> None:
    """Before the tables (already locked FOR UPDATE) and their columns are deleted: one statement for the
    tables' and their columns' tag associations (their statistics and store-kept partitions go by the
    foreign keys' ON DELETE CASCADE when the table rows are deleted: no statement of their own)."""
    if table_ids:
        s.connection().execute(_UNTAG_TABLES, {"ids": table_ids})


# Built once (expanding bind parameters): building the statement costs more CPU than running it. The
# columns are a subquery, not a list: a cascade of 10k tables has too many columns for one statement's
# bind parameters (SQLite allows 32766, PostgreSQL 65535). On the Core tables, run on the connection:
# no ORM objects of these rows to update, so none of the ORM's bulk-DML machinery either.
_IDS: Any = bindparam("ids", expanding=True)
_RELATION: Any = TagRelationRow.__table__
_COLUMN: Any = ColumnRow.__table__
_UNTAG_TABLES = delete(_RELATION).where(or_(
    and_(_RELATION.c.object_type == "table", _RELATION.c.object_id.in_(_IDS)),
    and_(_RELATION.c.object_type == "column",
         _RELATION.c.object_id.in_(select(_COLUMN.c.id).where(_COLUMN.c.table_id.in_(_IDS)))),
))


def schemas_dropped(s: Session, schema_ids: list[int]) -> None:
    """After the schemas' tables were dropped (tables_dropped), before the schema rows are deleted."""
    if schema_ids:
        _untag(s, "schema", schema_ids)


def catalogs_dropped(s: Session, catalog_ids: list[int]) -> None:
    if catalog_ids:
        _untag(s, "catalog", catalog_ids)


def metalake_dropped(s: Session, metalake_id: int) -> None:
    """The metalake's tags (locked first, as a tag's own delete does) and their remaining associations
    (its catalogs, and with them every tagged object, are gone already)."""
    tag_ids = list(s.scalars(select(TagRow.id).where(TagRow.metalake_id == metalake_id).with_for_update()))
    if tag_ids:
        s.execute(delete(TagRelationRow).where(TagRelationRow.tag_id.in_(tag_ids)))
        s.execute(delete(TagRow).where(TagRow.id.in_(tag_ids)))
