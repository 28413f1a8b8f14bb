"""Who may do what, when gravitino.authorization.enable=true: Gravitino's rules as data, checked at
one door before any dispatcher runs (docs/authorization.md).

- rules.py        the rule language (owner of, privilege on, inherited privilege, service admin, ...)
                  and Gravitino's named rules, each evaluated against Facts
- facts.py        what a rule reads: the caller, the objects a request names, their owners and the
                  caller's privileges on them
- reader.py       Facts from the shared database, read fresh for every request (no cache outlives a
                  revoke) in one snapshot
- bulk.py         the set-based statements that read facts about a list's items or a tag's objects
- declaration.py  what a route declares (its rule, the kind it acts on, how its lists are filtered)
The Flask side, the door itself, is gravimeta/api/door.py.
"""
