"""Disabling a metalake or catalog is ordered with the structural changes inside it, across replicas.

Replica B's create has its claim and has passed its in-use checks: its intent is recorded and its
engine call is about to be sent (failpoint engine.before_call). Replica A then disables the metalake
(or the catalog) the create works in. The disable claims the metalake's scope like any structural change
there, so it waits for B's claim: it cannot be acknowledged while the create may still land. Without that
claim the disable answered at once and the create then landed in the disabled metalake, both answering
200. Once the disable is acknowledged, a create is refused.

PostgreSQL and MariaDB with the lease table; PostgreSQL with AUTO too (the disable then takes advisory
locks, which wait for the create's lease).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
import requests

from gravimeta.demo.client import Replica
from tests.conftest import require_backend
from tests.engine.conftest import (
    Api,
    C,
    Cluster,
    M,
    S,
    in_background,
    ok,
    path_of,
    sqlite_properties,
    wait_until,
)
from tests.support.databases import fresh_database


@pytest.fixture(params=[("postgresql", "LEASE_TABLE"), ("mysql", "LEASE_TABLE"), ("postgresql", "AUTO")],
                ids=["postgresql", "mysql", "postgresql-auto"])
def in_use_cluster(request, tmp_path, cluster_of) -> Any:
    backend, lock_backend = request.param
    require_backend(backend)
    with fresh_database(backend, tmp_path) as url:
        yield cluster_of(url, GRAVIMETA_DISTRIBUTED_LOCK_BACKEND=lock_backend)


def contention_waits(replica: Replica) -> float:
    """How many claim attempts of this replica found a live related claim (its /metrics)."""
    text = requests.get(f"{replica.url}/metrics", timeout=10).text
    return sum(float(v) for v in re.findall(r"^gravimeta_claim_contention_waits_total\{[^}]*\} (\S+)$", text, re.M))


# what is disabled, and the create that runs inside it
CASES: dict[str, tuple[str, Callable[[Api], tuple[int, dict[str, Any]]], str]] = {
    "metalake": (path_of(M), lambda api: api.table("t"), "MetalakeNotInUseException"),
    "catalog": (path_of(M, C), lambda api: api.schema("s2"), "CatalogNotInUseException"),
}


@pytest.mark.parametrize("disabled", sorted(CASES))
def test_a_disable_waits_for_a_create_that_holds_its_claim(in_use_cluster: Cluster, disabled):
    cluster = in_use_cluster
    a, b = cluster.replica("a"), cluster.replica("b")
    path, create, refusal = CASES[disabled]
    ok(Api(a).metalake())
    ok(Api(a).catalog("sqlite", sqlite_properties()))
    ok(Api(a).schema(S))
    waits_before = contention_waits(a)

    cluster.fp.arm("engine.before_call", tag="b")
    creating, created = in_background(lambda: create(Api(b)))
    held = cluster.fp.wait_reached("engine.before_call", tag="b")  # claim held, in-use checked, intent recorded
    disabling, disabled_answer = in_background(lambda: a.request("PATCH", path, {"inUse": False}))
    wait_until("the disable answered or waited for a claim",
               lambda: disabled_answer or contention_waits(a) > waits_before)
    assert not disabled_answer, (
        f"the {disabled} was disabled ({disabled_answer}) while a create inside it held its claim and could still "
        "land")

    cluster.fp.resume(held)
    creating.join(60)
    disabling.join(60)
    assert created and created[0][0] == 200, created  # it came first: made while the metalake was in use
    assert disabled_answer and disabled_answer[0][0] == 200, disabled_answer

    status, body = create(Api(b))  # after the disable was acknowledged: refused
    assert (status, body.get("type")) == (409, refusal), (status, body)
    ok(a.request("PATCH", path, {"inUse": False}))  # already disabled: nothing to write, under the claim too
    ok(a.request("PATCH", path, {"inUse": True}))
    assert cluster.open_intents() == []
