"""The retirement of a dropped catalog in its engine.

A catalog's engine calls are fenced by keys under the catalog's own key ('/c<id>.<create time>',
engine_keys.py), which no other catalog ever carries. So once the catalog is dropped, nothing of gravimeta
would ever again make its engine see a higher token under that key, and a call of an earlier holder still
in flight (a drop held in the metastore past its client's timeout, say) could land at any later time: in
an engine that a catalog re-created under the same name now imports from, where it removes a table the
store has just been given.

So a drop retires the catalog's key first: under the drop's claim (the metalake's, or the root's for a
metalake drop), whose token is above every token granted under the catalog before, the engine is made to
see that token on the catalog's key (engine_door.barrier), and refuses every earlier call below it from
then on. An engine that cannot be reached at that moment is not told: the drop goes on (a catalog whose
engine is gone for good must still be droppable), is logged, and the window that leaves is stated in
docs/consistency.md §6.
"""

from __future__ import annotations

import logging

from gravimeta import errors
from gravimeta.dispatch import engine_door
from gravimeta.dispatch.connector_cache import ConnectorCache
from gravimeta.dispatch.engine_keys import catalog_key
from gravimeta.entities import Catalog
from gravimeta.store.database import disabled_for_test

log = logging.getLogger(__name__)


def retire(connectors: ConnectorCache, catalog: Catalog) -> bool:
    """Make the catalog's engine refuse every call made under the catalog so far (call under the drop's
    claim, before the store drop). Whether the engine was told (False: it does not check fences, the lock
    is off, or it could not be reached)."""
    assert catalog.id is not None, "a stored catalog has an id"
    connector = connectors.for_catalog(catalog)
    if connector.process_local or not engine_door.can_fence(connector) or disabled_for_test("retire"):
        return False  # (TEST-ONLY switch: shows that tests/engine/test_engine_identity_races.py needs it)
    try:
        engine_door.barrier(connector, catalog_key(catalog.id, catalog.audit.create_time), engine_door.RETIREMENT)
    except errors.GravitinoError as exc:
        log.warning("catalog %s.%s: its engine was not told of the drop (%s); a call still in flight there from "
                    "before the drop may land later", catalog.metalake, catalog.name, exc.message)
        return False
    return True
