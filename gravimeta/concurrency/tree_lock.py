"""TreeLock: in-process hierarchical read/write locks keyed by name path (Gravitino's TreeLock).

Locking /m/c/s/t takes READ on /, /m, /m/c, /m/c/s and READ or WRITE on the leaf, always root first,
so two operations can never wait on each other in a cycle. A WRITE on a node therefore excludes every
operation on its whole subtree, and a READ excludes writers of the node and its ancestors.

Nodes are created on demand and removed as soon as no operation references them, so memory follows
the number of paths in use, not the number ever seen. Locks are not reentrant: a thread that already
holds a path must not lock it (or a descendant's ancestor) again for WRITE.

Writers are preferred: once a writer waits on a node, new readers of that node queue behind it, so a
steady stream of readers (loads) cannot starve a structural change.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum

from gravimeta.entities import NameIdentifier


class LockType(Enum):
    READ = "READ"
    WRITE = "WRITE"


class _RWLock:
    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    def acquire(self, lock_type: LockType) -> None:
        with self._cond:
            if lock_type is LockType.READ:
                self._cond.wait_for(lambda: not self._writer and not self._writers_waiting)
                self._readers += 1
            else:
                self._writers_waiting += 1
                granted = False
                try:
                    self._cond.wait_for(lambda: not self._writer and not self._readers)
                    granted = True
                finally:
                    self._writers_waiting -= 1
                    if not granted:
                        # readers held back for this writer must not wait for a wake-up that never comes
                        self._cond.notify_all()
                self._writer = True

    def release(self, lock_type: LockType) -> None:
        with self._cond:
            if lock_type is LockType.READ:
                self._readers -= 1
            else:
                self._writer = False
            self._cond.notify_all()

    def state(self) -> tuple[int, bool]:
        with self._cond:
            return self._readers, self._writer


class _Node:
    __slots__ = ("name", "children", "refs", "lock")

    def __init__(self, name: str):
        self.name = name
        self.children: dict[str, _Node] = {}
        self.refs = 0
        self.lock = _RWLock()


class TreeLock:
    """The lock tree of one process."""

    def __init__(self) -> None:
        self._root = _Node("/")
        self._mutex = threading.Lock()  # guards the tree's shape and reference counts only

    @contextmanager
    def locked(self, ident: NameIdentifier, lock_type: LockType) -> Iterator[None]:
        """Hold READ on every ancestor of `ident` and `lock_type` on `ident` for the block."""
        nodes = self._reference(ident)
        held: list[tuple[_Node, LockType]] = []
        try:
            for i, node in enumerate(nodes):
                node_type = lock_type if i == len(nodes) - 1 else LockType.READ
                node.lock.acquire(node_type)
                held.append((node, node_type))
            yield
        finally:
            for node, node_type in reversed(held):
                node.lock.release(node_type)
            self._dereference(ident, nodes)

    def node_count(self) -> int:
        """Nodes currently in the tree, the root included (for tests and metrics)."""
        with self._mutex:
            count, stack = 0, [self._root]
            while stack:
                node = stack.pop()
                count += 1
                stack.extend(node.children.values())
            return count

    def _reference(self, ident: NameIdentifier) -> list[_Node]:
        with self._mutex:
            nodes = [self._root]
            for name in ident.levels:
                parent = nodes[-1]
                nodes.append(parent.children.setdefault(name, _Node(name)))
            for node in nodes:
                node.refs += 1
            return nodes

    def _dereference(self, ident: NameIdentifier, nodes: list[_Node]) -> None:
        with self._mutex:
            for node in nodes:
                node.refs -= 1
            # evict unused nodes leaf first; a parent is kept while any child remains
            for depth in range(len(nodes) - 1, 0, -1):
                node, parent = nodes[depth], nodes[depth - 1]
                if node.refs == 0 and not node.children:
                    parent.children.pop(node.name, None)
                else:
                    break
