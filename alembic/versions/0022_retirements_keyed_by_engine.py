"""Pending retirements get a table of their own, one row per (catalog incarnation, engine).

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-16

A retirement the engine missed (a catalog dropped, or moved to another engine, while the engine it
left did not answer: gravimeta/dispatch/retirement.py) was one gm_server_setting row per catalog key,
`retire <key>`, written with an upsert. A catalog that left two engines in turn, each missing its
barrier, kept only the second engine's record: the first was never told. And a delivered record was
deleted by its name, so a record written under that name while the delivery was on its way went
undelivered.

gm_retirement(id, catalog_key, engine, token, catalog, provider, properties, locations, recorded_at):
  * `engine` names the engine retired from: 'id:<identity>' when its identity was recorded, else its
    sorted locations; unique with catalog_key, so another engine's retirement is another row;
  * a second retirement of one catalog key on one engine keeps the higher token (the row's version);
  * a delivery deletes the row by id and token together, so a row raised meanwhile stays.
The `retire ` rows of gm_server_setting move into the table; the downgrade moves them back, keeping
for each catalog key the row with the highest token (what the older code can hold).
"""

import hashlib
import json

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

PREFIX = "retire "


def _timestamp() -> sa.types.TypeEngine:
    return sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def _engine_of(locations: list[str]) -> str:
    identities = sorted(x for x in locations if x.startswith("id:"))
    return identities[0] if identities else "\n".join(sorted(locations))


def upgrade() -> None:
    op.create_table(
        "gm_retirement",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("catalog_key", sa.String(100), nullable=False),
        sa.Column("engine", sa.String(64), nullable=False),
        sa.Column("token", sa.BigInteger, nullable=False),
        sa.Column("catalog", sa.Text, nullable=False),
        sa.Column("provider", sa.String(100), nullable=False),
        sa.Column("properties", sa.Text, nullable=False),
        sa.Column("locations", sa.Text, nullable=False),
        sa.Column("recorded_at", _timestamp(), nullable=False),
        sa.UniqueConstraint("catalog_key", "engine", name="uq_gm_retirement_key_engine"),
        sqlite_autoincrement=True,
    )
    bind = op.get_bind()
    rows = bind.execute(sa.text("SELECT name, value, updated_at FROM gm_server_setting WHERE name LIKE :p"),
                        {"p": PREFIX + "%"}).all()
    for name, value, updated_at in rows:
        data = json.loads(value)
        locations = sorted({str(x) for x in data.get("locations") or ()} |
                           ({data["location"]} if isinstance(data.get("location"), str) else set()))
        bind.execute(sa.text(
            "INSERT INTO gm_retirement (catalog_key, engine, token, catalog, provider, properties, locations, "
            "recorded_at) VALUES (:k, :e, :t, :c, :p, :props, :l, :at)"), {
            "k": name[len(PREFIX):], "e": hashlib.sha256(_engine_of(locations).encode()).hexdigest(),
            "t": int(data["token"]), "c": str(data.get("catalog", "")), "p": data["provider"],
            "props": json.dumps(data["properties"]), "l": json.dumps(locations), "at": updated_at})
    bind.execute(sa.text("DELETE FROM gm_server_setting WHERE name LIKE :p"), {"p": PREFIX + "%"})


def downgrade() -> None:
    bind = op.get_bind()
    rows = bind.execute(sa.text("SELECT catalog_key, token, catalog, provider, properties, locations, recorded_at "
                                "FROM gm_retirement ORDER BY token")).all()
    kept: dict[str, tuple[str, object]] = {}
    for key, token, catalog, provider, properties, locations, recorded_at in rows:  # the highest token wins
        kept[key] = (json.dumps({"provider": provider, "properties": json.loads(properties),
                                 "locations": json.loads(locations), "token": int(token), "catalog": catalog}),
                     recorded_at)
    for key, (value, recorded_at) in kept.items():
        bind.execute(sa.text("INSERT INTO gm_server_setting (name, value, updated_at) VALUES (:n, :v, :at)"),
                     {"n": PREFIX + key, "v": value, "at": recorded_at})
    op.drop_table("gm_retirement")
