"""SQLAlchemy models of the owner and principal tables (created by alembic/versions/0009_owners.py; the
owners of tags and roles since 0017)."""

from __future__ import annotations

from sqlalchemy import ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from gravimeta.store.models import NEVER_REUSED, AuditColumns, Base, name_type

USER, GROUP = "USER", "GROUP"
#: the kinds of object an owner row can belong to, and the column of each kind's own foreign key
OBJECT_COLUMNS = {"METALAKE": "metalake_id", "CATALOG": "catalog_id", "SCHEMA": "schema_id", "TABLE": "table_id",
                  "TAG": "tag_id", "ROLE": "role_id"}


class PrincipalRow(AuditColumns, Base):
    """A user or group added to a metalake."""

    __tablename__ = "gm_principal"
    __table_args__ = (UniqueConstraint("metalake_id", "kind", "name", name="uq_principal_metalake_kind_name"),
                      NEVER_REUSED)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    metalake_id: Mapped[int] = mapped_column(ForeignKey("gm_metalake.id", ondelete="CASCADE"), nullable=False)
    kind: Mapped[str] = mapped_column(String(8), nullable=False)  # USER or GROUP
    name: Mapped[str] = mapped_column(name_type(), nullable=False)


class OwnerRow(AuditColumns, Base):
    """The owner of one object when it is not the object's creator; owner_type NULL means "no owner"
    (its owner was removed from the metalake). metalake_id is the object's metalake (the object itself
    for a METALAKE row); the object's own foreign key deletes the row with the object."""

    __tablename__ = "gm_owner"
    __table_args__ = (UniqueConstraint("object_kind", "object_id", name="uq_owner_object"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    object_kind: Mapped[str] = mapped_column(String(16), nullable=False)
    object_id: Mapped[int] = mapped_column(Integer, nullable=False)
    metalake_id: Mapped[int] = mapped_column(ForeignKey("gm_metalake.id", ondelete="CASCADE"), nullable=False)
    catalog_id: Mapped[int | None] = mapped_column(ForeignKey("gm_catalog.id", ondelete="CASCADE"))
    schema_id: Mapped[int | None] = mapped_column(ForeignKey("gm_schema.id", ondelete="CASCADE"))
    table_id: Mapped[int | None] = mapped_column(ForeignKey("gm_table.id", ondelete="CASCADE"))
    tag_id: Mapped[int | None] = mapped_column(ForeignKey("gm_tag.id", ondelete="CASCADE"))
    role_id: Mapped[int | None] = mapped_column(ForeignKey("gm_role.id", ondelete="CASCADE"))
    owner_type: Mapped[str | None] = mapped_column(String(8))
    owner_name: Mapped[str | None] = mapped_column(name_type())
