"""The stub's metastore: databases and their tables, kept in one JSON file that is replaced
atomically (write temp, fsync, rename) after every change, so a crash leaves the old or the new
state, never a torn file.

Fences: the highest fencing token seen per claim scope is kept in the same file ("fences"). Every
mutating method checks the caller's fence under the metastore lock before it changes anything and
records it with the change, in the same atomic write (the fence contract in connectors/base.py); a
stale call raises StubError(409, "StaleFence") and changes nothing. `fence()` records a token alone
(the repair's barrier).

Identity: a random id kept in the same file ("identity"), made when the storage is first opened and
never changed after, so that the stub says which metastore it is however it is reached (another port,
another address, after a restart on the same data): gravimeta recognises one engine by it
(Connector.engine_identity)."""

from __future__ import annotations

import copy
import json
import os
import threading
import uuid
from pathlib import Path
from typing import Any

from connectors.fencing import NO_FENCE, Fence, highest_conflicting
from connectors.hive_stub import partitions as hive
from connectors.hive_stub.errors import StubError

__all__ = ["METASTORE_FILE", "Metastore", "StubError"]

#: the file in the stub's data directory that holds everything, fences included
METASTORE_FILE = "metastore.json"


class Metastore:
    def __init__(self, data_dir: Path):
        self.file = data_dir / METASTORE_FILE
        data_dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._data: dict[str, Any] = (
            json.loads(self.file.read_text(encoding="utf-8")) if self.file.exists() else {"databases": {}}
        )
        self._data.setdefault("fences", {})
        if not isinstance(self._data.get("identity"), str):
            self._data["identity"] = uuid.uuid4().hex
            self._persist()  # before it is ever answered: a restart must find the same one

    @property
    def identity(self) -> str:
        """The storage's own id (made once, kept with the data)."""
        return str(self._data["identity"])

    # ---------------------------------------------------------------- helpers

    def _persist(self) -> None:
        temporary = self.file.with_name(f".{self.file.name}.{os.getpid()}.tmp")
        with open(temporary, "w", encoding="utf-8") as out:
            json.dump(self._data, out, sort_keys=True)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, self.file)
        directory = os.open(self.file.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    def _admit(self, fence: Fence) -> None:
        """Check the call's fence and record it (persisted with the change). Call with the lock held."""
        if fence.token is None:
            return
        fences: dict[str, int] = self._data["fences"]
        seen = highest_conflicting(fences.items(), fence)
        if seen is not None:
            raise StubError(409, "StaleFence", f"fence {fence.token} on {fence.key} is stale: fence {seen} was seen")
        fences[fence.key] = max(fences.get(fence.key, 0), fence.token)

    def fence(self, fence: Fence) -> dict[str, Any]:
        """The barrier: record the fence without changing anything else."""
        with self._lock:
            self._admit(fence)
            self._persist()
            return {"scope": fence.key, "fence": fence.token}

    def _db(self, name: str) -> dict[str, Any]:
        db = self._data["databases"].get(name)
        if db is None:
            raise StubError(404, "NoSuchDatabase", f"Database {name} does not exist")
        return db

    def _table(self, db: str, name: str) -> dict[str, Any]:
        table = self._db(db)["tables"].get(name)
        if table is None:
            raise StubError(404, "NoSuchTable", f"Table {db}.{name} does not exist")
        return table

    @staticmethod
    def _name(body: dict[str, Any]) -> str:
        name = body.get("name")
        if not isinstance(name, str) or not name:
            raise StubError(400, "BadRequest", "a non-empty 'name' is required")
        return name

    # ---------------------------------------------------------------- databases

    def list_databases(self) -> list[str]:
        with self._lock:
            return sorted(self._data["databases"])

    def get_database(self, name: str) -> dict[str, Any]:
        with self._lock:
            db = self._db(name)
            return {k: copy.deepcopy(v) for k, v in db.items() if k not in ("tables", "partitions")}

    def create_database(self, body: dict[str, Any], fence: Fence = NO_FENCE) -> dict[str, Any]:
        name = self._name(body)
        with self._lock:
            self._admit(fence)
            if name in self._data["databases"]:
                raise StubError(409, "DatabaseAlreadyExists", f"Database {name} already exists")
            db = {"name": name, "comment": body.get("comment"), "properties": dict(body.get("properties") or {})}
            self._data["databases"][name] = {**db, "tables": {}}
            self._persist()
            return db

    def drop_database(self, name: str, cascade: bool, fence: Fence = NO_FENCE) -> dict[str, Any]:
        with self._lock:
            self._admit(fence)
            db = self._db(name)
            if db["tables"] and not cascade:
                raise StubError(409, "DatabaseNotEmpty", f"Database {name} has {len(db['tables'])} table(s)")
            del self._data["databases"][name]
            self._persist()
            return {"dropped": True}

    # ---------------------------------------------------------------- tables

    def list_tables(self, db: str) -> list[str]:
        with self._lock:
            return sorted(self._db(db)["tables"])

    def get_table(self, db: str, name: str) -> dict[str, Any]:
        with self._lock:
            return copy.deepcopy(self._table(db, name))

    def create_table(self, db: str, body: dict[str, Any], fence: Fence = NO_FENCE) -> dict[str, Any]:
        name = self._name(body)
        with self._lock:
            self._admit(fence)
            tables = self._db(db)["tables"]
            if name in tables:
                raise StubError(409, "TableAlreadyExists", f"Table {db}.{name} already exists")
            tables[name] = copy.deepcopy(body)
            self._persist()
            return body

    def replace_table(self, db: str, name: str, body: dict[str, Any], fence: Fence = NO_FENCE) -> dict[str, Any]:
        """Alter: the body replaces the table's definition; its name must stay the same."""
        if self._name(body) != name:
            raise StubError(400, "BadRequest", "alter cannot rename; use the rename call")
        with self._lock:
            self._admit(fence)
            self._table(db, name)
            self._db(db)["tables"][name] = copy.deepcopy(body)
            self._persist()
            return body

    def rename_table(self, db: str, name: str, new_db: str, new_name: str, fence: Fence = NO_FENCE) -> dict[str, Any]:
        with self._lock:
            self._admit(fence)
            table = self._table(db, name)
            target = self._db(new_db)["tables"]
            if (db, name) == (new_db, new_name):
                return copy.deepcopy(table)
            if new_name in target:
                raise StubError(409, "TableAlreadyExists", f"Table {new_db}.{new_name} already exists")
            del self._db(db)["tables"][name]
            target[new_name] = {**table, "name": new_name}
            moved = self._db(db).get("partitions", {}).pop(name, None)
            if moved is not None:
                self._db(new_db).setdefault("partitions", {})[new_name] = moved
            self._persist()
            return copy.deepcopy(target[new_name])

    def drop_table(self, db: str, name: str, fence: Fence = NO_FENCE) -> dict[str, Any]:
        with self._lock:
            self._admit(fence)
            self._table(db, name)
            del self._db(db)["tables"][name]
            self._db(db).get("partitions", {}).pop(name, None)
            self._persist()
            return {"dropped": True}

    # ---------------------------------------------------------------- partitions (partitions.py: Hive's rules)

    def _partitions(self, db: str, table: str) -> list[dict[str, Any]]:
        self._table(db, table)
        return self._db(db).setdefault("partitions", {}).setdefault(table, [])

    def list_partitions(self, db: str, table: str) -> list[dict[str, Any]]:
        with self._lock:
            definition = self._table(db, table)
            found = [hive.as_gravitino(definition, kept) for kept in self._partitions(db, table)]
            return sorted(found, key=lambda p: p["name"])

    def get_partition(self, db: str, table: str, name: str) -> dict[str, Any]:
        with self._lock:
            definition = self._table(db, table)
            spec, columns = hive.spec_of(name), hive.partition_columns(definition)
            for kept in self._partitions(db, table):
                if [k for k, _ in spec] == columns and hive.matches(columns, kept, spec):
                    return hive.as_gravitino(definition, kept)
            raise StubError(404, "NoSuchPartition", f"Hive partition {name} does not exist in table {db}.{table}")

    def add_partition(self, db: str, table: str, body: dict[str, Any], fence: Fence = NO_FENCE) -> dict[str, Any]:
        with self._lock:
            self._admit(fence)
            definition = self._table(db, table)
            kept = hive.new_partition(definition, body)
            partitions = self._partitions(db, table)
            if any(p["values"] == kept["values"] for p in partitions):
                name = hive.part_name(hive.partition_columns(definition), kept["values"])
                raise StubError(409, "PartitionAlreadyExists", f"Partition {name} already exists in table {db}.{table}")
            partitions.append(kept)
            self._persist()
            return hive.as_gravitino(definition, kept)

    def drop_partitions(self, db: str, table: str, name: str, fence: Fence = NO_FENCE) -> dict[str, Any]:
        """Drop every partition the (partial) specification `name` matches; how many went."""
        with self._lock:
            self._admit(fence)
            columns = hive.partition_columns(self._table(db, table))
            spec = hive.spec_of(name)
            partitions = self._partitions(db, table)
            kept = [p for p in partitions if not hive.matches(columns, p, spec)]
            dropped = len(partitions) - len(kept)
            if dropped:
                partitions[:] = kept
                self._persist()
            return {"dropped": dropped}
