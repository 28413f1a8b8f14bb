"""The request schemas (gravimeta/api/payloads.py) are built once per process and reused: building a
marshmallow Schema costs more than loading a body with it, so no request may build one."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema

from tests.api.helpers import ok


def test_table_requests_build_no_marshmallow_schema_after_the_first(api, schema, monkeypatch):
    columns = [{"name": f"c{k}", "type": "integer", "comment": "", "nullable": True} for k in range(3)]

    def cycle(name: str) -> None:
        ok(api.post(schema.children(), {"name": name, "comment": "", "properties": {}, "columns": columns}))
        ok(api.put(schema.child(name).path, {"updates": [{"@type": "rename", "newName": f"{name}_r"},
                                                         {"@type": "setProperty", "property": "k", "value": "v"}]}))
        ok(api.delete(schema.child(f"{name}_r").path))

    cycle("first")
    built: list[str] = []
    init = Schema.__init__

    def counting(self: Schema, *args: Any, **kwargs: Any) -> None:
        built.append(type(self).__name__)
        init(self, *args, **kwargs)

    monkeypatch.setattr(Schema, "__init__", counting)
    cycle("second")
    assert built == []
