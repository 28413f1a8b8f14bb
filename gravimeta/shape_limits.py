"""Bounds on the depth and size of every nested structure a request can carry, checked at parse time.

Why bounds at all: the server walks types and expressions recursively (validation, normalisation,
copies, JSON encoding in the store and the journal, rendering), and Python's recursion limit is about
1,000 frames for the whole request. Without a bound, a type nested ~600 levels deep failed with a
RecursionError (500, a 180 KB traceback per request), and one nested ~480 levels was accepted but could
never be altered or renamed afterwards, because those paths recurse deeper than create. With these
bounds, everything that is accepted stays far below the recursion limit on every path, so what can be
created can also be altered, renamed, moved and dropped (tests/hardening/test_nesting.py proves that
with structures at every limit).

Why these numbers: generous for real schemas, and far below the point where recursion is a concern
(a type at the depth limit needs < 100 frames anywhere). Gravitino has no explicit bound of its own
(Jackson refuses JSON nested deeper than 1,000 levels); MySQL, the strictest of Gravitino's relational
engines, allows 4,096 columns per table, 64 indexes per table and 16 columns per index (we allow 64).
The request body is bounded as a whole by gravimeta.server.max-request-bytes (1 MiB by default), which
also bounds the total number of nodes.
"""

from __future__ import annotations

#: nesting of the request JSON itself (objects and arrays), checked first: a backstop for anything the
#: specific limits below do not reach (a structure at every limit below stays under ~170 levels)
JSON_DEPTH = 256
#: nesting of complex types: list, map, struct and union each add one level (`list<integer>` is 1)
TYPE_DEPTH = 32
#: nesting of expressions: each function call adds one level (default values, sort terms, function
#: partitioning, distribution arguments, partition values)
EXPRESSION_DEPTH = 32
#: fields of one struct, types of one union, arguments of one function call
TYPE_MEMBERS = 4096
FUNCTION_ARGUMENTS = 1024
#: parts of a table definition
COLUMNS = 4096
PARTITIONING = 64
PARTITION_ASSIGNMENTS = 4096
SORT_ORDERS = 64
INDEXES = 64
INDEX_FIELDS = 64
#: names in one field path (["a", "b"] names field b of struct column a)
FIELD_PATH = TYPE_DEPTH + 1
#: changes in one alter request
UPDATES = 4096
