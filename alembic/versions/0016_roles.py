"""Roles, the privileges they hold on objects, and their grants to users and groups.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-12

- gm_role: the roles of a metalake (Gravitino's RoleOperations), unique by name in it; deleted with it.
- gm_role_privilege: one privilege (name, ALLOW or DENY) of a role on one object, keyed by the object's
  kind and id, so it follows renames. Besides metalake_id, exactly one of catalog_id, schema_id, table_id,
  tag_id is set: the object's own foreign key, ON DELETE CASCADE, deletes the grant with the object, in
  whichever request or cascade deletes it. Unique on (role, object, privilege name): one condition per
  name and object.
- gm_role_member: a role granted to a user or group (gm_principal), deleted with either.
Indexes on the foreign keys keep the cascades from scanning (InnoDB makes its own), and the door's read
of the caller's privileges on a few objects uses (object_kind, object_id).
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def _name_collation() -> str:
    """Binary, NO PAD, as for every name column (0001): names compare byte for byte."""
    dialect = op.get_bind().dialect
    if getattr(dialect, "is_mariadb", False):
        return "utf8mb4_nopad_bin"
    if dialect.name == "mysql" and (dialect.server_version_info or (0,)) >= (8, 0):
        return "utf8mb4_0900_bin"
    return "utf8mb4_bin"


def _audit() -> list[sa.Column]:
    return [
        sa.Column("creator", sa.String(256)),
        sa.Column("create_time", sa.String(40)),
        sa.Column("last_modifier", sa.String(256)),
        sa.Column("last_modified_time", sa.String(40)),
        sa.Column("version", sa.Integer, nullable=False, server_default="1"),
    ]


def _cascade(table: str) -> sa.ForeignKey:
    return sa.ForeignKey(f"{table}.id", ondelete="CASCADE")


def upgrade() -> None:
    name_type = sa.String(128).with_variant(mysql.VARCHAR(128, collation=_name_collation()), "mysql", "mariadb")
    op.create_table(
        "gm_role",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("metalake_id", sa.Integer, _cascade("gm_metalake"), nullable=False),
        sa.Column("name", name_type, nullable=False),
        sa.Column("properties", sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")),
        *_audit(),
        sa.UniqueConstraint("metalake_id", "name", name="uq_role_metalake_name"),
    )
    op.create_table(
        "gm_role_privilege",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("role_id", sa.Integer, _cascade("gm_role"), nullable=False),
        sa.Column("object_kind", sa.String(16), nullable=False),
        sa.Column("object_id", sa.Integer, nullable=False),
        sa.Column("metalake_id", sa.Integer, _cascade("gm_metalake"), nullable=False),
        sa.Column("catalog_id", sa.Integer, _cascade("gm_catalog")),
        sa.Column("schema_id", sa.Integer, _cascade("gm_schema")),
        sa.Column("table_id", sa.Integer, _cascade("gm_table")),
        sa.Column("tag_id", sa.Integer, _cascade("gm_tag")),
        sa.Column("privilege", sa.String(32), nullable=False),
        sa.Column("effect", sa.String(8), nullable=False),  # the condition; "condition" is reserved in MySQL
        sa.UniqueConstraint("role_id", "object_kind", "object_id", "privilege", name="uq_role_privilege"),
    )
    op.create_index("ix_role_privilege_object", "gm_role_privilege", ["object_kind", "object_id"])
    op.create_table(
        "gm_role_member",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("principal_id", sa.Integer, _cascade("gm_principal"), nullable=False),
        sa.Column("role_id", sa.Integer, _cascade("gm_role"), nullable=False),
        sa.UniqueConstraint("principal_id", "role_id", name="uq_role_member"),
    )
    if op.get_bind().dialect.name not in ("mysql", "mariadb"):  # InnoDB indexes every foreign key itself
        for column in ("metalake_id", "catalog_id", "schema_id", "table_id", "tag_id"):
            op.create_index(f"ix_role_privilege_{column}", "gm_role_privilege", [column])
        op.create_index("ix_role_member_role_id", "gm_role_member", ["role_id"])


def downgrade() -> None:
    op.drop_table("gm_role_member")
    op.drop_table("gm_role_privilege")
    op.drop_table("gm_role")
