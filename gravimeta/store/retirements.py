"""The pending retirements: what an engine missed when a catalog left it (gm_retirement, alembic 0022).

A retirement the engine could not be told at the drop (or the move) is one row, keyed by what it
retires: the catalog's key (its incarnation, '/c<id>.<create time>') and the engine it left (its
identity when one was recorded, else its sorted locations). So a catalog that leaves two engines in
turn has two rows, and neither replaces the other. One catalog key retired twice on one engine keeps
the higher token: the row's version. A delivery deletes its row by id and token (compare-and-delete),
so a row raised to a newer token while the delivery was on its way stays, and is delivered again. A raised
row is a new row (a new id): ids only grow, which is how a connector made earlier learns there is more
to deliver (high_water; gravimeta/dispatch/connector_cache.py).
The dispatch side is gravimeta/dispatch/retirement.py.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    delete,
    func,
    insert,
    select,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from gravimeta.concurrency.db_clock import db_now, dialect_of
from gravimeta.store.database import disabled_for_test, write_session

retirement = Table(
    "gm_retirement", MetaData(),
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("catalog_key", String(100), nullable=False),
    Column("engine", String(64), nullable=False),
    Column("token", BigInteger, nullable=False),
    Column("catalog", Text, nullable=False),
    Column("provider", String(100), nullable=False),
    Column("properties", Text, nullable=False),
    Column("locations", Text, nullable=False),
    Column("recorded_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("catalog_key", "engine", name="uq_gm_retirement_key_engine"),
)


@dataclass(frozen=True)
class Retirement:
    """One pending retirement: `token` on `catalog_key` in the engine at `locations` (its identity among
    them, 'id:<identity>', when it was recorded), whose catalog had `provider` and `properties`."""

    id: int
    catalog_key: str
    token: int
    catalog: str
    provider: str
    properties: dict[str, str]
    locations: tuple[str, ...]


def engine_of(locations: list[str] | set[str] | tuple[str, ...]) -> str:
    """The engine a retirement is keyed by (a digest, 64 characters): its identity when known, else the
    set of its places."""
    identities = sorted(x for x in locations if x.startswith("id:"))
    named = identities[0] if identities else "\n".join(sorted(locations))
    return hashlib.sha256(named.encode()).hexdigest()


def record(engine: Engine, catalog_key: str, token: int, catalog: str, provider: str,
           properties: dict[str, str], locations: list[str]) -> None:
    """Record that the engine at `locations` must refuse every call below `token` on `catalog_key`. Another
    engine's record of the same key is another row; this engine's keeps the higher token."""
    which = engine_of(locations)
    values: dict[str, Any] = {"catalog": catalog, "provider": provider, "properties": json.dumps(properties),
                              "locations": json.dumps(sorted(locations)), "token": token}
    r = retirement.c
    for _ in range(3):  # two replicas recording at once: one inserts, the other raises the row
        try:
            with write_session(engine) as s:
                now = db_now(dialect_of(engine))
                if disabled_for_test("retirement_per_engine"):  # TEST-ONLY: one row per catalog key, as before
                    s.execute(delete(retirement).where(r.catalog_key == catalog_key, r.engine != which))
                found = s.execute(select(r.id, r.token).where(r.catalog_key == catalog_key, r.engine == which)
                                  .with_for_update()).first()
                if found is None:
                    s.execute(insert(retirement).values(catalog_key=catalog_key, engine=which, recorded_at=now,
                                                        **values))
                elif found.token < token:  # raised: a new row (a new id: ConnectorCache's high water grows)
                    s.execute(delete(retirement).where(r.id == found.id))
                    s.execute(insert(retirement).values(catalog_key=catalog_key, engine=which, recorded_at=now,
                                                        **values))
                return
        except IntegrityError:
            continue
    raise RuntimeError(f"could not record the retirement of {catalog_key}")


def high_water(bind: Engine | Session) -> int:
    """The highest id among the pending retirements (0: none). Every record, new or raised, gets a higher id
    than any before it (ids are never handed out again), so a reader that has seen this far has seen them all."""
    query = select(func.coalesce(func.max(retirement.c.id), 0))
    if isinstance(bind, Session):
        return int(bind.scalar(query) or 0)
    with bind.connect() as conn:
        if bind.dialect.name == "postgresql":  # one round trip (no BEGIN, no ROLLBACK): it runs before every change
            conn = conn.execution_options(isolation_level="AUTOCOMMIT")
        return int(conn.scalar(query) or 0)


def pending(engine: Engine) -> list[Retirement]:
    r = retirement.c
    with engine.connect() as conn:
        rows = conn.execute(select(r.id, r.catalog_key, r.token, r.catalog, r.provider, r.properties, r.locations)
                            .order_by(r.id)).all()
    return [Retirement(row.id, row.catalog_key, int(row.token), row.catalog, row.provider,
                       json.loads(row.properties), tuple(json.loads(row.locations))) for row in rows]


def delivered(engine: Engine, done: Retirement) -> bool:
    """Delete the record `done` was read from, if it still holds what was delivered (its id and token);
    whether it did. A record raised to a newer token meanwhile stays, to be delivered in its turn."""
    r = retirement.c
    match: ColumnElement[bool] = (r.id == done.id) & (r.token == done.token)
    if disabled_for_test("retirement_compare_delete"):  # TEST-ONLY: by the catalog's key alone, as by name before
        match = r.catalog_key == done.catalog_key
    with write_session(engine) as s:
        return bool(s.execute(delete(retirement).where(match)).rowcount)  # type: ignore[attr-defined]
