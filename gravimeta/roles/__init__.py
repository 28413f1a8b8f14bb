"""Roles and privileges, like Gravitino's RoleOperations, PermissionOperations and
MetadataObjectRoleOperations (docs/authorization.md).

- privileges.py  Gravitino's privilege names, what each can be granted on, the checks of a grant
- models.py      the gm_role, gm_role_privilege and gm_role_member tables
- store.py       reads and writes of roles, privileges and grants, each in one transaction
- resolve.py     a role's securable objects, names to ids, in a snapshot before its write
- limits.py      the caps: securable objects per role, roles per user or group
- dispatcher.py  the role and permission operations, with Gravitino's checks in its order

The door (gravimeta/api/door.py) reads the privileges of the caller's roles for every request it
decides, from the database: a revoke is seen by the next request on every replica.
"""
