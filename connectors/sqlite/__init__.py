"""The SQLite connector (`provider: sqlite`): a catalog is a real SQLite database file.

Layout. The catalog property `path` names the catalog file, relative to the catalog root directory
(env GRAVIMETA_SQLITE_CATALOG_ROOT, default `<GRAVIMETA_HOME or ./var>/sqlite-catalogs`); the resolved
path must stay inside the root. A Gravitino schema is an SQLite *schema* in SQLite's own sense, an
attached database file: `<path>.schemas/<slug>-<hash>.<incarnation>.sqlite`. The catalog file holds the
registry, `gravimeta_schemas(name, file)`, which is the real list of schemas and names each schema's
file, so `list_schemas` reads the catalog and any SQLite tool can `ATTACH` a schema file and see
ordinary tables with their real names.

Why attached files rather than a table-name prefix: tables keep their real names (no ambiguous
`schema.table` encoding of arbitrary names), dropping a schema with all its tables is one registry
change plus one file deletion, and every operation that spans a schema and the catalog (create schema,
move a table between schemas) is still one SQLite transaction, because SQLite commits a transaction
over attached rollback-journal databases atomically (super-journal). Files are named from a hash of
the schema name, so any name (quotes, unicode, 128 characters, names equal up to case) maps to a
short, portable file name, and from an incarnation number the catalog never reuses, so a schema
dropped and re-created under the same name gets a file of its own (registry.py: why, and how a drop
deletes its file).

Tables are real tables: Gravitino column types map to SQLite affinities (the Gravitino type itself
stays in the EntityStore), NOT NULL, representable defaults, PRIMARY KEY / UNIQUE from the table's
indexes. Every identifier is double-quoted with quotes doubled; values travel as bound parameters or
as quoted literals, so no name can inject SQL. Comments, properties, partitioning, distribution and
sort orders have no SQLite counterpart and live in the EntityStore only.
"""

from connectors.sqlite.connector import SQLiteCatalogConnector
from connectors.sqlite.ddl import quote
from connectors.sqlite.paths import ROOT_ENV, catalog_root, resolve_catalog_path, schema_file_name
from connectors.sqlite.registry import schema_file

__all__ = ["ROOT_ENV", "SQLiteCatalogConnector", "catalog_root", "quote", "resolve_catalog_path", "schema_file",
           "schema_file_name"]
