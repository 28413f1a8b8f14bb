"""The door: the one place where access is decided, before any dispatcher runs.

Each view declares what it needs next to its route (@needs, @public, @operator; the Declaration in
gravimeta/access/declaration.py). register_door refuses to build an app with a view that declares
nothing, and installs one before_request check that reads the endpoint's declaration:

1. `public` routes: nothing to check (they are not even authenticated).
2. `operator` routes (lock inspection, metrics): a service admin whenever authorization is on (whatever
   authenticates callers, even nothing: then everyone is `anonymous` and refused unless listed), and
   with authorization off once service admins are configured and callers are authenticated.
3. authorization off: everything else passes (Gravitino's PassThroughAuthorizer: anyone may create a
   metalake).
4. a service admin passes (gravimeta lets service admins do anything; in Gravitino they may only
   create metalakes).
5. `SERVICE_ADMIN` routes refuse everyone else (401 to a caller without credentials, 403 otherwise).
6. the caller must be a user of the route's metalake (403 otherwise; a metalake that does not exist
   is refused the same way, as in Gravitino).
7. the route's rule, evaluated against facts read fresh from the database (gravimeta/access/reader.py):
   403 ForbiddenException unless it holds.

Structural operations (create, rename, drop) check again once their claim and TreeLock are held (the
coordinator calls `recheck`), so that no other structural change of that scope (a drop and re-create
of the same name by someone else) can come between the check and the change. Lists are filtered with
the route's `lists` rule through `visible`, `listed` (a list the store alone holds, read and filtered
in one snapshot) and `visible_objects`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from flask import Flask, current_app, g, has_request_context, request

from gravimeta import errors, failpoints, metadata_objects
from gravimeta.access import rules
from gravimeta.access.declaration import Declaration, declare, declared
from gravimeta.access.facts import COLUMN, METALAKE, ROLE, TAG, TREE, USER, Facts
from gravimeta.access.reader import AccessReader, Target
from gravimeta.access.rules import Rule
from gravimeta.api.auth import ANONYMOUS, STATIC, require_credentials
from gravimeta.config import Settings, service_admins
from gravimeta.store.database import disabled_for_test

T = TypeVar("T")
View = Callable[..., Any]
#: the URL variables the door understands; a route with another one is refused at build time
TREE_ARGS = ("metalake", "catalog", "schema", "table")
KNOWN_ARGS = frozenset({*TREE_ARGS, "kind", "object_type", "full_name", "tag_name", "user_name", "group_name",
                        "role", "partition", "filename"})


class UndeclaredRoute(RuntimeError):
    """A view without an access declaration, or with URL variables the door cannot read."""


def needs(rule: Rule | None, *, on: str | None = None, member: bool = True, lists: Rule | None = None,
          modify: Rule | None = None, each_tag: bool = False) -> Callable[[View], View]:
    """Declare the rule of a route (None: any caller; see Declaration for the rest)."""
    return declare(Declaration(rule, on, member, lists, modify, each_tag))


public = declare(Declaration(None, member=False, public=True))
operator = declare(Declaration(None, member=False, operator=True))


def target_of(args: dict[str, Any]) -> Target:
    """What the URL variables name. A malformed `/objects/{type}/{fullName}` is a 400 here, before
    any rule: there is no object to decide about."""
    path = tuple(args[a] for a in TREE_ARGS if a in args)
    tag, subject, role = args.get("tag_name"), args.get("user_name"), args.get("role")
    if "full_name" not in args:
        return Target(path, tag, subject, role=role)
    obj = metadata_objects.parse(args.get("kind") or args.get("object_type") or "", args["full_name"])
    kind = obj.type.upper()
    if obj.type == "metalake":
        return Target(path, tag, subject, METALAKE, (METALAKE,), role)
    if obj.type == "tag":
        return Target(path, obj.name, subject, TAG, (TAG,), role)
    if obj.type == "role":
        return Target(path, tag, subject, ROLE, (ROLE,), obj.name)
    if metadata_objects.DEPTH.get(obj.type) is None:  # policy, job, job template: one name
        return Target(path, tag, subject, kind, (kind,), role)
    names = obj.names[:3]
    chain = tuple(reversed(TREE[1:1 + len(names)]))
    if kind != COLUMN and kind != chain[0]:  # fileset, topic, model, view, function: in a schema
        names, chain = names[:2], (kind, *tuple(reversed(TREE[1:3])))
    elif kind == COLUMN:
        chain = (COLUMN, *chain)
    return Target((*path, *names), tag, subject, kind, chain, role)


class Door:
    def __init__(self, settings: Settings, reader: AccessReader):
        self.enabled = settings.authorization_enabled
        self.admins = service_admins(settings)
        self.reader = reader

    # ------------------------------------------------------------------ the check

    def check(self) -> None:
        """before_request: refuse the request unless its endpoint's declaration lets the caller in."""
        if request.method == "OPTIONS" or request.endpoint in (None, STATIC):
            return
        declaration = declared(current_app.view_functions.get(request.endpoint))
        if declaration is None:  # register_door makes this impossible; refuse rather than guess
            raise errors.Forbidden(f"{request.method} {request.path} declares no access rule")
        if declaration.public:
            return
        user = g.get("user") or ANONYMOUS
        if declaration.operator:
            if self._operators_only() and user not in self.admins:
                self._refuse_non_admin(user)
            return
        if not self.enabled or user in self.admins:
            return
        if declaration.rule is rules.SERVICE_ADMIN:
            self._refuse_non_admin(user)
        self._decide(declaration, user, request.view_args or {})
        if not disabled_for_test("no_access_recheck"):  # TEST-ONLY: no second check under the claim
            g.access_recheck = lambda: self._decide(declaration, user, request.view_args or {})
        failpoints.hit("access.after_check", endpoint=request.endpoint, user=user)

    def _operators_only(self) -> bool:
        """Whether the operator endpoints are closed to everyone but service admins."""
        return self.enabled or bool(self.admins and current_app.extensions.get("gravimeta.auth"))

    def recheck(self) -> None:
        """Run again, once a structural operation holds its claim, the check this request passed."""
        if has_request_context():
            again = g.get("access_recheck")
            if again is not None:
                again()

    def _decide(self, declaration: Declaration, user: str, args: dict[str, Any]) -> None:
        target = target_of(args)
        if declaration.rule is None and not (declaration.member and target.path) and declaration.lists is None:
            return
        facts = self.reader.facts(user, target)
        g.access_facts = facts
        if declaration.member and target.path and not facts.member:
            raise errors.Forbidden(f"User '{user}' is not a user of metalake {target.path[0]}: a metalake's "
                                   "owner or a user with MANAGE_USERS must add it to the metalake first")
        rule = declaration.rule
        if declaration.modify is not None and _asks_to_modify():
            rule = declaration.modify
        if rule is None:
            return
        if declaration.each_tag:
            names = _body_tags()
            for level in self.reader.children(facts, TAG, names).values():
                if not rule.holds(facts.with_level(level)):
                    self._refuse(user, rule, TAG, level.name)
            return
        if not rule.holds(facts):
            self._refuse(user, rule, declaration.on, _name_of(declaration.on, target, args))

    @staticmethod
    def _refuse(user: str, rule: Rule, kind: str | None, name: str | None) -> None:
        what = f" on {kind.lower()} {name}" if kind and name else ""
        raise errors.Forbidden(f"User '{user}' is not authorized to {request.method} {request.path}{what}: "
                               f"the request needs {rule}")

    @staticmethod
    def _refuse_non_admin(user: str) -> None:
        require_credentials(f"{request.method} {request.path} needs a service admin's credentials")
        raise errors.Forbidden(f"User '{user}' is not a service admin; {request.method} {request.path} needs "
                               "a user listed in gravitino.authorization.serviceAdmins")

    # ------------------------------------------------------------------ lists

    def _filtering(self) -> tuple[Declaration, Facts] | None:
        """The list rule and this request's facts, or None when the caller sees everything."""
        declaration = declared(current_app.view_functions.get(request.endpoint or ""))
        user = g.get("user") or ANONYMOUS
        if declaration is None or declaration.lists is None or not self.enabled or user in self.admins:
            return None
        facts = g.get("access_facts") or self.reader.facts(user, target_of(request.view_args or {}))
        return declaration, facts

    def visible(self, kind: str, items: list[T], name_of: Callable[[T], str]) -> list[T]:
        """The items of a list answer of `kind` objects that the caller may see (all of them with
        authorization off, for a service admin, or on a route without a `lists` rule)."""
        filtering = self._filtering()
        if filtering is None:
            return items
        return self._shown(kind, items, name_of, *filtering, listed_here=False)

    def listed(self, kind: str, load: Callable[[], list[T]], name_of: Callable[[T], str]) -> list[T]:
        """`visible` of the list `load` reads from the store, read and filtered in one snapshot: the
        filter then knows every item exists, and needs no read of the parent's children of its own."""
        filtering = self._filtering()
        if filtering is None:
            return load()
        with self.reader.store.snapshot():  # joined by the dispatcher's reads (EntityStore.snapshot)
            return self._shown(kind, load(), name_of, *filtering, listed_here=True)

    def _shown(self, kind: str, items: list[T], name_of: Callable[[T], str], declaration: Declaration, facts: Facts,
               listed_here: bool) -> list[T]:
        assert declaration.lists is not None
        names = [name_of(i) for i in items]
        if kind == METALAKE:
            mine = self.reader.memberships(facts.user)
            return [i for i, n in zip(items, names, strict=True) if n in mine]
        if kind == USER:
            return [i for i, n in zip(items, names, strict=True) if declaration.lists.holds(facts.with_subject(n))]
        standings = self.reader.standings(facts, kind, names, listed_here=listed_here)
        usual, unusual = rules.exceptions(declaration.lists, facts, standings)
        if usual:
            return [i for i, n in zip(items, names, strict=True) if n not in unusual] if unusual else items
        return [i for i, n in zip(items, names, strict=True) if n in unusual]

    def visible_objects(self, metalake: str, objects: Iterable[T], describe: Callable[[T], tuple[str, str]]) -> list[T]:
        """The metadata objects (`describe` gives each one's type and full name) the caller may see."""
        items = list(objects)
        filtering = self._filtering()
        if filtering is None:
            return items
        declaration, facts = filtering
        assert declaration.lists is not None
        targets = []
        for item in items:
            kind, full_name = describe(item)
            targets.append(target_of({"metalake": metalake, "kind": kind, "full_name": full_name}))
        verdicts = rules.each_holds(declaration.lists, self.reader.object_standings(facts, targets))
        return [item for item, shown in zip(items, verdicts, strict=True) if shown]


def _asks_to_modify() -> bool:
    """load table's `privileges` query parameter: a comma-separated list of privilege names."""
    raw = request.args.get("privileges") or ""
    return "MODIFY_TABLE" in (p.strip().upper() for p in raw.split(","))


def _body_tags() -> list[str]:
    """The tag names of a tag association body (a malformed body is the view's to refuse: none here)."""
    from gravimeta.api.requests import json_body

    body = json_body()
    names: list[str] = []
    if isinstance(body, dict):
        for key in ("tagsToAdd", "tagsToRemove"):
            value = body.get(key)
            if isinstance(value, list):
                names += [v for v in value if isinstance(v, str)]
    return names


def _name_of(kind: str | None, target: Target, args: dict[str, Any]) -> str | None:
    if kind is None:
        return None
    if kind in TREE:
        depth = TREE.index(kind) + 1
        return ".".join(target.path[:depth]) if len(target.path) >= depth else None
    if kind == TAG:
        return target.tag
    if kind == ROLE:
        return target.role
    return args.get("full_name") or args.get("user_name") or args.get("group_name")


def visible(kind: str, items: list[T], name_of: Callable[[T], str]) -> list[T]:
    """Door.visible of the current app."""
    door: Door = current_app.extensions["gravimeta.door"]
    return door.visible(kind, items, name_of)


def listed(kind: str, load: Callable[[], list[T]], name_of: Callable[[T], str]) -> list[T]:
    """Door.listed of the current app: for lists the store alone holds (catalogs, tags, roles)."""
    door: Door = current_app.extensions["gravimeta.door"]
    return door.listed(kind, load, name_of)


def visible_objects(metalake: str, objects: Iterable[T], describe: Callable[[T], tuple[str, str]]) -> list[T]:
    door: Door = current_app.extensions["gravimeta.door"]
    return door.visible_objects(metalake, objects, describe)


def undeclared(app: Flask) -> list[str]:
    """The endpoints of `app` without a declaration, or with URL variables the door cannot read."""
    problems = []
    for rule in app.url_map.iter_rules():
        if rule.endpoint == STATIC:
            continue
        if declared(app.view_functions.get(rule.endpoint)) is None:
            problems.append(f"{rule.rule} ({rule.endpoint}): no access declaration")
        unknown = set(rule.arguments) - KNOWN_ARGS
        if unknown:
            problems.append(f"{rule.rule} ({rule.endpoint}): the door cannot read {sorted(unknown)}")
    return problems


def route_table(app: Flask) -> list[str]:
    """One Markdown table row per method and route inside a metalake, with what it needs (the table of
    docs/authorization.md, which tests/compat/test_door.py holds to this)."""
    rows = []
    for rule in sorted(app.url_map.iter_rules(), key=lambda r: r.rule):
        declaration = declared(app.view_functions.get(rule.endpoint))
        if rule.endpoint == STATIC or declaration is None or declaration.public or declaration.operator:
            continue
        path = re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule.rule)
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            rows.append(f"| `{method} {path}` | {declaration.describe('metalake' in rule.arguments)} |")
    return rows


def register_door(app: Flask, reader: AccessReader, settings: Settings) -> Door:
    """Install the door; UndeclaredRoute when a route declares nothing."""
    problems = undeclared(app)
    if problems:
        raise UndeclaredRoute("routes without an access declaration: " + "; ".join(problems))
    door = Door(settings, reader)
    app.extensions["gravimeta.door"] = door
    app.before_request(door.check)
    return door
