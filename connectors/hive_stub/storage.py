"""The stub's metastore: databases and their tables, kept in one JSON file that is replaced
atomically (write temp, fsync, rename) after every change, so a crash leaves the old or the new
state, never a torn file."""

from __future__ import annotations

import copy
import json
import os
import threading
from pathlib import Path
from typing import Any


class StubError(Exception):
    """A metastore answer other than success: HTTP status, error name, message."""

    def __init__(self, status: int, error: str, message: str):
        super().__init__(message)
        self.status, self.error, self.message = status, error, message


class Metastore:
    def __init__(self, data_dir: Path):
        self.file = data_dir / "metastore.json"
        data_dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._data: dict[str, Any] = (
            json.loads(self.file.read_text(encoding="utf-8")) if self.file.exists() else {"databases": {}}
        )

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
            return {k: copy.deepcopy(v) for k, v in db.items() if k != "tables"}

    def create_database(self, body: dict[str, Any]) -> dict[str, Any]:
        name = self._name(body)
        with self._lock:
            if name in self._data["databases"]:
                raise StubError(409, "DatabaseAlreadyExists", f"Database {name} already exists")
            db = {"name": name, "comment": body.get("comment"), "properties": dict(body.get("properties") or {})}
            self._data["databases"][name] = {**db, "tables": {}}
            self._persist()
            return db

    def drop_database(self, name: str, cascade: bool) -> dict[str, Any]:
        with self._lock:
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

    def create_table(self, db: str, body: dict[str, Any]) -> dict[str, Any]:
        name = self._name(body)
        with self._lock:
            tables = self._db(db)["tables"]
            if name in tables:
                raise StubError(409, "TableAlreadyExists", f"Table {db}.{name} already exists")
            tables[name] = copy.deepcopy(body)
            self._persist()
            return body

    def replace_table(self, db: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """Alter: the body replaces the table's definition; its name must stay the same."""
        if self._name(body) != name:
            raise StubError(400, "BadRequest", "alter cannot rename; use the rename call")
        with self._lock:
            self._table(db, name)
            self._db(db)["tables"][name] = copy.deepcopy(body)
            self._persist()
            return body

    def rename_table(self, db: str, name: str, new_db: str, new_name: str) -> dict[str, Any]:
        with self._lock:
            table = self._table(db, name)
            target = self._db(new_db)["tables"]
            if (db, name) == (new_db, new_name):
                return copy.deepcopy(table)
            if new_name in target:
                raise StubError(409, "TableAlreadyExists", f"Table {new_db}.{new_name} already exists")
            del self._db(db)["tables"][name]
            target[new_name] = {**table, "name": new_name}
            self._persist()
            return copy.deepcopy(target[new_name])

    def drop_table(self, db: str, name: str) -> dict[str, Any]:
        with self._lock:
            self._table(db, name)
            del self._db(db)["tables"][name]
            self._persist()
            return {"dropped": True}
