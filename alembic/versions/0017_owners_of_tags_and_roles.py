"""Owners of tags and roles.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-13

gm_owner rows may now belong to a tag (object_kind TAG) or a role (ROLE), keyed like the others by the
object's id, so a tag's owner follows its renames. Each kind gets its own foreign key, ON DELETE
CASCADE, as catalogs, schemas and tables have: the database deletes the owner row with the tag or role,
whichever request deletes it. Until a row is written the owner is the creator, as for every object.
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

COLUMNS = (("tag_id", "gm_tag"), ("role_id", "gm_role"))


def upgrade() -> None:
    mysql = op.get_bind().dialect.name in ("mysql", "mariadb")
    with op.batch_alter_table("gm_owner") as batch:  # SQLite rebuilds the table to add a foreign key
        for column, table in COLUMNS:
            batch.add_column(sa.Column(column, sa.Integer))
            batch.create_foreign_key(f"fk_owner_{column}", table, [column], ["id"], ondelete="CASCADE")
    if not mysql:  # InnoDB indexes every foreign key itself
        for column, _ in COLUMNS:
            op.create_index(f"ix_owner_{column}", "gm_owner", [column])


def downgrade() -> None:
    op.execute("DELETE FROM gm_owner WHERE object_kind IN ('TAG', 'ROLE')")
    mysql = op.get_bind().dialect.name in ("mysql", "mariadb")
    if not mysql:
        for column, _ in COLUMNS:
            op.drop_index(f"ix_owner_{column}", "gm_owner")
    with op.batch_alter_table("gm_owner") as batch:
        for column, _ in COLUMNS:
            batch.drop_constraint(f"fk_owner_{column}", type_="foreignkey")
            batch.drop_column(column)
