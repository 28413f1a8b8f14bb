"""What a route declares about access, next to the route (gravimeta/api/door.py reads it).

Every view of the app carries one Declaration; the app refuses to build with a view that has none
(gravimeta/api/door.py, register_door), and tests/compat/test_door.py walks the URL map.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gravimeta.access.rules import Rule

ATTRIBUTE = "gravimeta_access"


@dataclass(frozen=True)
class Declaration:
    """`rule`: who may call the route when authorization is on (None: any caller, Gravitino declares
    no expression). `on`: the kind of object a refusal names. `member`: the caller must be a user of
    the route's metalake, which Gravitino checks before any expression of a route inside a metalake.
    `lists`: the rule each item of a list answer must pass to be shown. `modify`: the rule instead of
    `rule` when the request asks for modify privileges (load table `?privileges=MODIFY_TABLE`).
    `each_tag`: the rule must hold for each tag the request body names, as the tag the rule reads
    (tag associations). `public`: no authentication either (version, health, the OpenAPI document).
    `operator`: gravimeta's operator endpoints (lock inspection, metrics): service admins only whenever
    authorization is on; with it off, once any are configured and callers are authenticated."""

    rule: Rule | None
    on: str | None = None
    member: bool = True
    lists: Rule | None = None
    modify: Rule | None = None
    each_tag: bool = False
    public: bool = False
    operator: bool = False


    def describe(self, in_metalake: bool) -> str:
        """The declaration in words and Gravitino's notation, as docs/authorization.md lists it."""
        if self.public:
            return "open (no authentication)"
        if self.operator:
            return "a service admin (authorization on or off)"
        if self.rule is not None:
            text = f"`{self.rule}`"
        elif self.member and in_metalake:
            text = "any user of the metalake"
        else:
            text = "anyone (Gravitino declares no rule)" if in_metalake else "anyone"
        if self.lists is not None:
            text += f"; shows the items passing `{self.lists}`"
        if self.modify is not None:
            text += f"; with `?privileges=MODIFY_TABLE`: `{self.modify}`"
        if self.each_tag:
            text += "; for each tag the body names"
        return text


def declare(declaration: Declaration) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def mark(view: Callable[..., Any]) -> Callable[..., Any]:
        setattr(view, ATTRIBUTE, declaration)
        return view

    return mark


def declared(view: Callable[..., Any] | None) -> Declaration | None:
    return getattr(view, ATTRIBUTE, None)
