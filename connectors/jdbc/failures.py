"""What a PostgreSQL or MySQL/MariaDB error means for the caller: a Gravitino error that says whether the
change happened (connectors/base.py: a 4xx-class error means "nothing was changed").

Gravitino's converters (PostgreSqlExceptionConverter, JdbcExceptionConverter) map the existence errors to
its exception types and everything else to a 500; here everything the database refuses is a 4xx with
Gravitino's types, and only what leaves the outcome open is a 502 that says so. When an error is known
to have changed nothing depends on where the call was (`Phase`):

  CONNECTING  nothing was sent: EngineUnreachable (502, "nothing was changed")
  BEFORE      statements ran but nothing can have been applied: a PostgreSQL transaction before its
              COMMIT (the server rolls it back, also when the connection breaks), a MySQL call before its
              DDL was sent. A refusal is its 4xx; a timeout, a busy lock or a lost connection is
              EngineUnreachable (nothing was changed)
  APPLYING    the change was sent (a MySQL DDL, a PostgreSQL COMMIT). MySQL's DDL is one atomic statement
              (MariaDB 10.6+, MySQL 8.0), so a refusal the server answers for it, or a lock wait that
              timed out before it started, still means nothing was changed; a statement timeout (a
              DROP DATABASE is a loop of atomic drops), a lost connection, or any failure of a
              PostgreSQL COMMIT is ConnectionFailed: the change may or may not have been applied
"""

from __future__ import annotations

import enum

from gravimeta import errors


class Phase(enum.Enum):
    CONNECTING = "connecting"
    BEFORE = "before the change"
    APPLYING = "applying the change"


# PostgreSQL SQLSTATEs (Appendix A of its manual)
_PG_EXACT: dict[str, type[errors.GravitinoError]] = {
    "42P04": errors.SchemaAlreadyExists, "42P06": errors.SchemaAlreadyExists, "42P07": errors.TableAlreadyExists,
    "3F000": errors.NoSuchSchema, "42P01": errors.NoSuchTable, "42501": errors.Forbidden,
    "2BP01": errors.NonEmptySchema, "55000": errors.IllegalArgument,
}
#: classes of refusals: data (22), integrity (23), dependencies (2B), syntax or access (42), limits (54)
_PG_REFUSALS = ("22", "23", "2B", "42", "54")
_PG_UNSUPPORTED = ("0A",)
#: the server did not get to it: lock or statement timeout, deadlock, serialization, resources, shutdown
_PG_BUSY = ("55P03", "57014", "40P01", "40001", "25P03", "53", "57P")
_PG_UNREACHABLE = ("08", "28", "3D000")


def postgresql(exc: Exception, phase: Phase, what: str, where: str) -> errors.GravitinoError:
    """The Gravitino error for a psycopg error raised while `what` (a short description) ran at `where`."""
    state = getattr(exc, "sqlstate", None) or ""
    text = _first_line(exc)
    message = f"PostgreSQL at {where} refused {what}: {text}"
    if state in _PG_EXACT:
        return _PG_EXACT[state](message)
    if state.startswith(_PG_UNSUPPORTED):
        return errors.UnsupportedOperation(message)
    if state.startswith(_PG_REFUSALS):
        return errors.IllegalArgument(message)
    if phase is Phase.CONNECTING or (state.startswith(_PG_UNREACHABLE) and phase is not Phase.APPLYING):
        return errors.EngineUnreachable(f"Cannot use PostgreSQL at {where} for {what}: {text}; nothing was changed")
    if phase is Phase.BEFORE:  # a transaction that did not commit: the server has rolled it back
        reason = "it was busy or timed out" if state.startswith(_PG_BUSY) else "it failed"
        return errors.EngineUnreachable(f"PostgreSQL at {where} did not run {what} ({reason}: {text}); nothing was changed")
    return errors.ConnectionFailed(f"PostgreSQL at {where} failed while committing {what} ({text}); the change may or "
                                   "may not have been applied")


# MySQL and MariaDB error numbers
_MY_EXACT: dict[int, type[errors.GravitinoError]] = {
    1007: errors.SchemaAlreadyExists, 1050: errors.TableAlreadyExists, 1008: errors.NoSuchSchema,
    1049: errors.NoSuchSchema, 1146: errors.NoSuchTable, 1051: errors.NoSuchTable,
    1044: errors.Forbidden, 1142: errors.Forbidden, 1143: errors.Forbidden, 1227: errors.Forbidden,
}
#: what a DDL is refused for: its definition or the rows it meets
_MY_REFUSALS = frozenset({
    1048, 1054, 1059, 1060, 1061, 1062, 1063, 1064, 1067, 1068, 1069, 1070, 1071, 1072, 1074, 1075, 1089, 1090,
    1091, 1101, 1102, 1103, 1106, 1109, 1113, 1117, 1118, 1138, 1163, 1166, 1167, 1170, 1171, 1176, 1215, 1216, 1217,
    1235, 1264, 1265, 1273, 1286, 1292, 1366, 1406, 1451, 1452, 1553, 1554, 1830, 1831, 3106, 3780, 4028, 4029, 4031,
    4094, 4107,
})
#: the server did not get to it (lock waits, timeouts, deadlocks, too many connections, interrupted)
_MY_BUSY = frozenset({1040, 1203, 1205, 1213, 1317, 1969, 3024, 3572})
#: busy before a DDL could start: a lock wait timed out (the statement takes its metadata lock first)
_MY_NOT_STARTED = frozenset({1205})
#: no usable connection (cannot connect, access denied at login, gone away, lost)
_MY_UNREACHABLE = frozenset({1045, 1053, 1129, 1130, 2002, 2003, 2005, 2006, 2013, 2055})


def mysql(exc: Exception, phase: Phase, what: str, where: str) -> errors.GravitinoError:
    """The Gravitino error for a PyMySQL error raised while `what` ran at `where`."""
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
    text = str(exc.args[1]) if len(exc.args) > 1 else _first_line(exc)
    message = f"MySQL at {where} refused {what}: {text}"
    if code in _MY_EXACT and not (phase is Phase.CONNECTING and code == 1044):
        return _MY_EXACT[code](message)
    if code in _MY_REFUSALS:
        return errors.IllegalArgument(message)
    if phase is Phase.CONNECTING or (phase is Phase.BEFORE and code in _MY_UNREACHABLE):
        return errors.EngineUnreachable(f"Cannot use MySQL at {where} for {what}: {text}; nothing was changed")
    if phase is Phase.BEFORE or code in _MY_NOT_STARTED:
        return errors.EngineUnreachable(f"MySQL at {where} did not run {what} ({text}); nothing was changed")
    return errors.ConnectionFailed(f"MySQL at {where} did not finish {what} ({text}); the change may or may not "
                                   "have been applied")


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else exc.__class__.__name__)[:500]
