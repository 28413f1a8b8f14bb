"""The JDBC connectors (`provider: jdbc-postgresql` and `jdbc-mysql`): catalogs on a PostgreSQL database or a
MySQL/MariaDB server, with Gravitino 1.3's provider names, catalog properties, type mappings and rules
(docs/engines.md). Gravitino reaches them through JDBC drivers; gravimeta through psycopg 3 and PyMySQL,
the drivers its own store uses, after turning Gravitino's JDBC URL into theirs (settings.py).

Both check each mutating call's fence in the engine: PostgreSQL in the same transaction as the DDL
(pgfences.py), MySQL under a named lock held from the check to the DDL's end (myfences.py).
"""
