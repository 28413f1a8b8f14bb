"""On SQLite, the ids of metadata objects are never handed out again.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-05

An id names one object forever: an open intent names its catalog by id (gm_operation_journal.catalog_id),
owners, tag associations and role privileges name their object by id, and a replica may hold a catalog's
id while another drops it. On SQLite a plain INTEGER PRIMARY KEY hands out the highest id again once its
row is deleted, so a catalog created after a drop of the newest one took over the dropped catalog's open
intents: the repair judged them against the new catalog's engine and applied them to the new catalog
(docs/consistency.md §3.1). PostgreSQL sequences and InnoDB's persistent auto-increment (MariaDB 10.2.4+,
MySQL 8) never reuse one, so this revision changes nothing there.

On SQLite the object tables (metalake, catalog, schema, table, column, tag, role, principal) are rebuilt
with AUTOINCREMENT (Alembic's batch mode: copy, drop, rename; gravimeta.store.migrations runs it with
foreign keys off, so the drop deletes nothing that refers to the old rows). A rebuilt table's counter
starts at its highest id; gm_catalog's also above every catalog id an intent still names, so that a
catalog dropped before this upgrade with its intent still open is not succeeded by a new one under its id.
"""

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

#: parents first (the order only matters for reading; the foreign keys are off meanwhile)
TABLES = ("gm_metalake", "gm_catalog", "gm_schema", "gm_table", "gm_column", "gm_tag", "gm_role", "gm_principal")


def _rebuild(autoincrement: bool) -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    if bind.exec_driver_sql("PRAGMA foreign_keys").scalar():
        raise RuntimeError("revision 0019 rebuilds tables that others refer to: run it with foreign keys off "
                           "(gravimeta db upgrade does)")
    for table in TABLES:
        with op.batch_alter_table(table, recreate="always", table_kwargs={"sqlite_autoincrement": autoincrement}):
            pass


def upgrade() -> None:
    _rebuild(True)
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    top = bind.execute(sa.text("SELECT max(id) FROM (SELECT max(id) AS id FROM gm_catalog UNION ALL "
                               "SELECT max(catalog_id) FROM gm_operation_journal)")).scalar()
    if top is not None:
        bind.execute(sa.text("DELETE FROM sqlite_sequence WHERE name = 'gm_catalog'"))
        bind.execute(sa.text("INSERT INTO sqlite_sequence (name, seq) VALUES ('gm_catalog', :top)"), {"top": top})


def downgrade() -> None:
    _rebuild(False)
