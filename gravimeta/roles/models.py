"""SQLAlchemy models of roles, their grants of privileges, and their grants to users and groups
(created by the alembic revision "roles").

Everything refers to other rows by id, never by name: a rename of a catalog, schema or table keeps the
grants on it (the name shown is read from the object's row each time), and a dropped object, role or
user takes its grants with it through the foreign keys' ON DELETE CASCADE, whichever request or cascade
deletes it. A new object of the same name has a new id and inherits no grant.
"""

from __future__ import annotations

from sqlalchemy import ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from gravimeta.store.models import NEVER_REUSED, AuditColumns, Base, JSONText, name_type

#: the kinds of object a role can hold privileges on here, and the column of each kind's foreign key
OBJECT_COLUMNS = {"METALAKE": "metalake_id", "CATALOG": "catalog_id", "SCHEMA": "schema_id",
                  "TABLE": "table_id", "TAG": "tag_id"}


class RoleRow(AuditColumns, Base):
    """A role of a metalake; its creator owns it until another owner is set (gm_owner)."""

    __tablename__ = "gm_role"
    __table_args__ = (UniqueConstraint("metalake_id", "name", name="uq_role_metalake_name"), NEVER_REUSED)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    metalake_id: Mapped[int] = mapped_column(ForeignKey("gm_metalake.id", ondelete="CASCADE"), nullable=False)
    name: Mapped[str] = mapped_column(name_type(), nullable=False)
    properties: Mapped[dict[str, str]] = mapped_column(JSONText, default=dict)


class RolePrivilegeRow(Base):
    """One privilege of a role on one object (object_kind, object_id): its securable objects are the
    objects it has rows for. One condition per privilege name and object (Gravitino refuses a role
    that both allows and denies a privilege on one object). Exactly one of the object columns is set,
    besides metalake_id, which every row carries (the object's metalake, or the metalake itself)."""

    __tablename__ = "gm_role_privilege"
    __table_args__ = (
        UniqueConstraint("role_id", "object_kind", "object_id", "privilege", name="uq_role_privilege"),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    role_id: Mapped[int] = mapped_column(ForeignKey("gm_role.id", ondelete="CASCADE"), nullable=False)
    object_kind: Mapped[str] = mapped_column(String(16), nullable=False)
    object_id: Mapped[int] = mapped_column(Integer, nullable=False)
    metalake_id: Mapped[int] = mapped_column(ForeignKey("gm_metalake.id", ondelete="CASCADE"), nullable=False)
    catalog_id: Mapped[int | None] = mapped_column(ForeignKey("gm_catalog.id", ondelete="CASCADE"))
    schema_id: Mapped[int | None] = mapped_column(ForeignKey("gm_schema.id", ondelete="CASCADE"))
    table_id: Mapped[int | None] = mapped_column(ForeignKey("gm_table.id", ondelete="CASCADE"))
    tag_id: Mapped[int | None] = mapped_column(ForeignKey("gm_tag.id", ondelete="CASCADE"))
    privilege: Mapped[str] = mapped_column(String(32), nullable=False)
    #: the condition, ALLOW or DENY ("condition" is a reserved word in MySQL)
    effect: Mapped[str] = mapped_column(String(8), nullable=False)


class RoleMemberRow(Base):
    """A role granted to a user or group of the metalake."""

    __tablename__ = "gm_role_member"
    __table_args__ = (UniqueConstraint("principal_id", "role_id", name="uq_role_member"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    principal_id: Mapped[int] = mapped_column(ForeignKey("gm_principal.id", ondelete="CASCADE"), nullable=False)
    role_id: Mapped[int] = mapped_column(ForeignKey("gm_role.id", ondelete="CASCADE"), nullable=False)
