"""Journal intents name their catalog by id, remember when a repair first held their scope, and the
servers record the sqlite catalog root they use.

Revision ID: 0008
Revises: 0006
Create Date: 2026-12-05

- gm_operation_journal.catalog_id: the id of the catalog the intent belongs to. Every repair decision
  is keyed by it: an intent whose catalog is gone is discarded, never applied to a catalog created
  since under the same name (docs/consistency.md §4). Rows already open are placed by the names in
  their payload (the best there is for them); a row whose catalog is gone stays NULL and is discarded.
- gm_operation_journal.observed_at: when a repair first held a claim related to the intent's scope
  while the intent was open (database clock). Its holder's claim had ended by then, so for an engine
  that cannot check fences "not applied" becomes final one call window later.
- On SQLite the table is rebuilt with AUTOINCREMENT: a plain INTEGER PRIMARY KEY reuses the highest id
  after its row is deleted, and an intent id must name one operation forever (a client is told "pending
  operation N"; a holder that lost its claim withdraws its intent by id). PostgreSQL sequences and
  InnoDB's persistent auto-increment never reuse one.
- gm_server_setting(name, value, updated_at): settings a server publishes for the tools that must work
  like it; today `sqlite_catalog_root`, which `gravimeta repair` compares with its own before it judges
  any engine.
"""

import json

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0008"
down_revision = "0006"
branch_labels = None
depends_on = None


def _timestamp() -> sa.types.TypeEngine:
    return sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        with op.batch_alter_table("gm_operation_journal", recreate="always",
                                  table_kwargs={"sqlite_autoincrement": True}) as batch:
            batch.add_column(sa.Column("catalog_id", sa.Integer, nullable=True))
            batch.add_column(sa.Column("observed_at", _timestamp(), nullable=True))
    else:
        op.add_column("gm_operation_journal", sa.Column("catalog_id", sa.Integer, nullable=True))
        op.add_column("gm_operation_journal", sa.Column("observed_at", _timestamp(), nullable=True))
    op.create_table(
        "gm_server_setting",
        sa.Column("name", sa.String(100), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("updated_at", _timestamp(), nullable=False),
    )
    _place_open_rows()


def _place_open_rows() -> None:
    bind = op.get_bind()
    rows = bind.execute(sa.text("SELECT id, payload FROM gm_operation_journal")).all()
    for row_id, payload in rows:
        data = json.loads(payload)
        found = bind.execute(sa.text(
            "SELECT c.id FROM gm_catalog c JOIN gm_metalake m ON c.metalake_id = m.id WHERE m.name = :m AND c.name = :c"
        ), {"m": data.get("m"), "c": data.get("c")}).scalar()
        if found is not None:
            bind.execute(sa.text("UPDATE gm_operation_journal SET catalog_id = :c WHERE id = :i"), {"c": found, "i": row_id})


def downgrade() -> None:
    op.drop_table("gm_server_setting")
    with op.batch_alter_table("gm_operation_journal") as batch:
        batch.drop_column("observed_at")
        batch.drop_column("catalog_id")
