"""The domain exceptions. Each carries its Gravitino error code, HTTP status and the Java `type` name
that the official clients dispatch on, so one API handler can render every error the same way.
"""

from __future__ import annotations


class GravitinoError(Exception):
    """Base of every error the server reports on purpose."""

    code = 1002
    http_status = 500
    type_name = "RuntimeException"

    def __init__(self, message: str, detail: str | None = None):
        super().__init__(message)
        self.message = message
        #: what only the server log may see (absolute file paths, database hosts, ports and roles): the
        #: API logs it with the request id and never sends it (gravimeta/api/errors.py)
        self.detail = detail


class IllegalArgument(GravitinoError):
    code, http_status, type_name = 1001, 400, "IllegalArgumentException"


class NotFound(GravitinoError):
    code, http_status, type_name = 1003, 404, "NotFoundException"


class NoSuchMetalake(NotFound):
    type_name = "NoSuchMetalakeException"


class NoSuchCatalog(NotFound):
    type_name = "NoSuchCatalogException"


class NoSuchSchema(NotFound):
    type_name = "NoSuchSchemaException"


class NoSuchTable(NotFound):
    type_name = "NoSuchTableException"


class IllegalMetadataObject(IllegalArgument):
    type_name = "IllegalMetadataObjectException"


class NoSuchMetadataObject(NotFound):
    type_name = "NoSuchMetadataObjectException"


class NoSuchUser(NotFound):
    type_name = "NoSuchUserException"


class NoSuchGroup(NotFound):
    type_name = "NoSuchGroupException"


class NoSuchRole(NotFound):
    type_name = "NoSuchRoleException"


class IllegalRole(IllegalArgument):
    """A grant or revoke names a role that does not exist (Gravitino: IllegalRoleException, a 400)."""

    type_name = "IllegalRoleException"


class IllegalPrivilege(IllegalArgument):
    type_name = "IllegalPrivilegeException"


class AlreadyExists(GravitinoError):
    code, http_status, type_name = 1004, 409, "AlreadyExistsException"


class MetalakeAlreadyExists(AlreadyExists):
    type_name = "MetalakeAlreadyExistsException"


class CatalogAlreadyExists(AlreadyExists):
    type_name = "CatalogAlreadyExistsException"


class SchemaAlreadyExists(AlreadyExists):
    type_name = "SchemaAlreadyExistsException"


class TableAlreadyExists(AlreadyExists):
    type_name = "TableAlreadyExistsException"


class UserAlreadyExists(AlreadyExists):
    type_name = "UserAlreadyExistsException"


class GroupAlreadyExists(AlreadyExists):
    type_name = "GroupAlreadyExistsException"


class RoleAlreadyExists(AlreadyExists):
    type_name = "RoleAlreadyExistsException"


class NonEmpty(GravitinoError):
    code, http_status, type_name = 1005, 409, "NotEmptyException"


class NonEmptyMetalake(NonEmpty):
    type_name = "NonEmptyMetalakeException"


class NonEmptyCatalog(NonEmpty):
    type_name = "NonEmptyCatalogException"


class NonEmptySchema(NonEmpty):
    type_name = "NonEmptySchemaException"


class UnsupportedOperation(GravitinoError):
    code, http_status, type_name = 1006, 405, "UnsupportedOperationException"


class ConnectionFailed(GravitinoError):
    code, http_status, type_name = 1007, 502, "ConnectionFailedException"


class Forbidden(GravitinoError):
    code, http_status, type_name = 1008, 403, "ForbiddenException"


class NotInUse(GravitinoError):
    code, http_status, type_name = 1009, 409, "NotInUseException"


class MetalakeNotInUse(NotInUse):
    type_name = "MetalakeNotInUseException"


class CatalogNotInUse(NotInUse):
    type_name = "CatalogNotInUseException"


class InUse(GravitinoError):
    code, http_status, type_name = 1010, 409, "InUseException"


class MetalakeInUse(InUse):
    type_name = "MetalakeInUseException"


class CatalogInUse(InUse):
    type_name = "CatalogInUseException"


class Unauthorized(GravitinoError):
    code, http_status, type_name = 1011, 401, "UnauthorizedException"


# Concurrency errors use code 1100 (UNKNOWN) rather than upstream's newer 1012: the 1.3.1 Python client
# knows codes 1000-1010 and 1100 only, and its table handler raises a bare ValueError on any other code.
# With 1100 every client family raises RESTException("Unable to process: <message>"), and the `type`
# and HTTP status still tell the three cases apart.


class Conflict(GravitinoError):
    """A concurrent change won (version check failed); retrying the request is safe."""

    code, http_status, type_name = 1100, 409, "OptimisticLockException"


class ScopeBusy(GravitinoError):
    """Waiting for a cross-node claim on a scope timed out: another replica is changing that subtree."""

    code, http_status, type_name = 1100, 503, "ScopeBusyException"


class FenceLost(GravitinoError):
    """This operation's claim was stolen (it outlived its lease); its store change was not committed."""

    code, http_status, type_name = 1100, 409, "FenceLostException"


class StaleFence(FenceLost):
    """A catalog engine refused a call whose fence is older than one it has seen (another operation
    holds the scope now), or the call's claim ran out before it could be made: nothing was changed."""

    type_name = "FenceLostException"


class EngineUnreachable(ConnectionFailed):
    """A connector could not reach its engine at all (a missing catalog file, every metastore endpoint
    refusing the connection): nothing was sent, so nothing was changed."""


class OutcomeUnknown(ConnectionFailed):
    """A journalled operation reached its catalog's engine but could not be finished here: its intent
    stays open as pending operation `pending`, which a repair will roll forward or back. The request
    may or may not take effect; look before retrying (docs/consistency.md §2)."""

    def __init__(self, message: str, pending: int):
        super().__init__(message)
        self.pending = pending


class StoreRefused(IllegalArgument):
    """The metadata database refused a value of this request (a data error or a check on the value):
    the change cannot be applied as asked, and retrying it as it is will not help."""


class StoreUnavailable(GravitinoError):
    """The shared database failed or cannot be reached, and nothing was changed (except CommitOutcomeUnknown,
    whose message says the change may have been made)."""

    code, http_status, type_name = 1002, 503, "RuntimeException"

    def __init__(self, message: str, detail: str | None = None, operation: str | None = None):
        super().__init__(message, detail)
        #: the store operation whose COMMIT failed, when the commit check looked it up (commit_check.py)
        self.operation = operation


class CommitOutcomeUnknown(StoreUnavailable):
    """The connection to the shared database failed during a COMMIT, and the server could not look
    afterwards whether that transaction committed (gravimeta/store/commit_check.py): the change may or
    may not have been made. `operation`: the id the transaction recorded, named in the message.

    502 with ConnectionFailed's code and type, as OutcomeUnknown. It stays a StoreUnavailable so that
    whoever treats a failed store as such keeps doing so: a repair stops, and the journal's store step
    answers with its own pending operation."""

    code, http_status, type_name = 1007, 502, "ConnectionFailedException"

    def __init__(self, message: str, operation: str, detail: str | None = None):
        super().__init__(message, detail, operation)


class SchemaVersionMismatch(Exception):
    """The database is not migrated to the revision this code expects; the server must not start."""

    def __init__(self, message: str, migratable: bool = False):
        super().__init__(message)
        #: `gravimeta db upgrade` fixes it (no schema yet, or an older one); not a newer revision
        self.migratable = migratable


# ---------------------------------------------------------------- partitions, tags, statistics


class NoSuchPartition(NotFound):
    type_name = "NoSuchPartitionException"


class PartitionAlreadyExists(AlreadyExists):
    type_name = "PartitionAlreadyExistsException"


class NoSuchTag(NotFound):
    type_name = "NoSuchTagException"


class TagAlreadyExists(AlreadyExists):
    type_name = "TagAlreadyExistsException"


class TagAlreadyAssociated(AlreadyExists):
    type_name = "TagAlreadyAssociatedException"


class IllegalStatisticName(IllegalArgument):
    type_name = "IllegalStatisticNameException"
