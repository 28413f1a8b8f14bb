"""Owners, and the users and groups of a metalake, like Gravitino's OwnerOperations, UserOperations and
GroupOperations (docs/authorization.md).

- models.py      the gm_owner and gm_principal tables (alembic 0009; owners of tags and roles: 0017)
- objects.py     Gravitino's metadata objects (`table` + `cat.sch.tbl`, `tag` + `name`) as paths in the tree
- store.py       reads and writes of owners and principals, each in one transaction
- authorizer.py  registers a metalake's creator as one of its users (who may do what: gravimeta/access/)
- dispatcher.py  the owner and principal operations, with their in-use checks and lock choices

An object's owner is its creator until someone sets another one; the row that records that is keyed by
the object's id, so it follows renames, and the database deletes it with the object (ON DELETE CASCADE),
whichever request or cascade deletes the object.
"""
