"""Where a `sqlite` catalog's files live: the catalog root, a catalog's file from its `path` property (kept
inside the root, symlinks resolved), the file name of each schema incarnation (a short hash of the
schema's name and the incarnation's number: any name maps to a portable file no other incarnation has),
and which files a catalog owns: no two catalogs may share any (location_guard), and no file with a second
hard link is used (check_single_link)."""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import re
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath, PureWindowsPath

from gravimeta import errors, failpoints

log = logging.getLogger(__name__)

ROOT_ENV = "GRAVIMETA_SQLITE_CATALOG_ROOT"

#: the longest file name (bytes) a component may have: NAME_MAX of Linux, macOS and the BSDs' file systems
NAME_MAX = 255
#: the longest whole path (bytes) the catalog file may have: PATH_MAX of Linux
PATH_MAX = 4096
#: the longest suffix gravimeta appends to a catalog file's name (its schema directory, SQLite's journal)
_LONGEST_SUFFIX = max(".schemas", "-journal", "-wal", "-shm", key=len)


def catalog_root() -> Path:
    """The directory every sqlite catalog lives under; read at call time, never at import."""
    configured = os.environ.get(ROOT_ENV)
    if configured:
        return Path(configured)
    home = os.environ.get("GRAVIMETA_HOME")
    return (Path(home) if home else Path.cwd() / "var") / "sqlite-catalogs"


def resolve_catalog_path(raw: str, root: Path | None = None) -> Path:
    """The catalog file for property `path`, or IllegalArgument when it is absolute, contains `..`,
    or resolves (through symlinks) outside the root."""
    if not raw or "\x00" in raw:
        raise errors.IllegalArgument("Catalog property 'path' must be a non-empty relative file path")
    if PurePosixPath(raw).is_absolute() or PureWindowsPath(raw).is_absolute() or raw.startswith("\\"):
        raise errors.IllegalArgument(f"Catalog property 'path' must be relative to the catalog root, not {raw!r}")
    parts = PurePosixPath(raw.replace("\\", "/")).parts
    if ".." in parts:
        raise errors.IllegalArgument(f"Catalog property 'path' must not contain '..': {raw!r}")
    _check_lengths(raw, parts)
    try:
        base = (root or catalog_root()).resolve()
        target = (base / Path(*parts)).resolve()
        schemas = target.with_name(target.name + ".schemas").resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Path.resolve before Python 3.13)
        raise errors.IllegalArgument(f"Catalog property 'path' {raw!r} cannot be resolved: {exc.__class__.__name__}") from None
    if len(os.fsencode(str(schemas))) > PATH_MAX:
        raise errors.IllegalArgument(f"Catalog property 'path' is too long: its files' paths would exceed {PATH_MAX} bytes")
    for path in (target, schemas):
        if path == base or not path.is_relative_to(base):
            raise errors.IllegalArgument(f"Catalog property 'path' {raw!r} resolves outside the catalog root")
    return target


def _check_lengths(raw: str, parts: tuple[str, ...]) -> None:
    """Refuse a component the file system cannot hold (ENAMETOOLONG would surface on first use), counting
    the suffix gravimeta appends to the file's name, in bytes as the file system counts them."""
    for index, part in enumerate(parts):
        suffix = _LONGEST_SUFFIX if index == len(parts) - 1 else ""
        size = len((part + suffix).encode("utf-8", "surrogatepass"))
        if size > NAME_MAX:
            raise errors.IllegalArgument(
                f"Catalog property 'path' has a component that is too long ({size} bytes with gravimeta's suffix "
                f"{suffix!r}; the limit is {NAME_MAX}): {part[:40]!r}..." if suffix else
                f"Catalog property 'path' has a component that is too long ({size} bytes; the limit is {NAME_MAX}): "
                f"{part[:40]!r}..."
            )


def schema_file_name(schema: str, incarnation: int | None = None) -> str:
    """A short, portable file name for one incarnation of a schema: `<slug>-<hash>.<incarnation>.sqlite`,
    unique as long as incarnations are never reused (registry.py). Without an incarnation: the name of
    the first layout, `<slug>-<hash>.sqlite`, which files made before incarnations still have (the
    registry names each schema's file, so nothing computes it any more)."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "_", schema)[:40].strip("_") or "schema"
    digest = hashlib.sha256(schema.encode("utf-8")).hexdigest()[:16]
    return f"{slug}-{digest}.sqlite" if incarnation is None else f"{slug}-{digest}.{incarnation}.sqlite"


# ------------------------------------------------------------------ files a catalog owns, and links

#: files SQLite keeps next to a database while it writes it
JOURNAL_SUFFIXES = ("-journal", "-wal", "-shm")
#: the lock file that serialises location checks (location_guard), in the catalog root
LOCK_FILE = ".gravimeta-locations.lock"


def owned_paths(catalog_file: Path) -> tuple[Path, ...]:
    """What a catalog owns: its file, SQLite's files next to it, and its schema directory (with all in it)."""
    return (catalog_file, *(catalog_file.with_name(catalog_file.name + s) for s in JOURNAL_SUFFIXES),
            catalog_file.with_name(catalog_file.name + ".schemas"))


def overlaps(a: Path, b: Path) -> bool:
    """Whether catalogs with files `a` and `b` (resolved) would share a file or a directory: the same
    file, one's journal as the other's file, or one inside the other's schema directory."""
    return any(x == y or x in y.parents or y in x.parents for x in owned_paths(a) for y in owned_paths(b))


def check_single_link(path: Path, error: type[errors.GravitinoError], what: str) -> None:
    """Refuse a database file (or SQLite's file next to it) that has another hard link: its other name
    may be outside the catalog root, and writing through the one inside would change that file."""
    for candidate in (path, *(path.with_name(path.name + s) for s in JOURNAL_SUFFIXES)):
        try:
            found = os.lstat(candidate)
        except (FileNotFoundError, NotADirectoryError):
            continue  # nothing there (yet): nothing to refuse
        links = found.st_nlink
        if stat.S_ISREG(found.st_mode) and links > 1:  # a directory always has 2+ (its '.' and its entry)
            raise error(f"{what} has {links} hard links; gravimeta uses only files with a single link")


@contextmanager
def location_guard(raw: str, in_use: Callable[[], Iterable[tuple[str, str]]], timeout_s: float = 10.0) -> Iterator[None]:
    """Hold the catalog root's location lock while the caller checks and registers a catalog on `raw`.

    `in_use()` lists (catalog label, `path` property) of every other sqlite catalog, read from the store
    after the lock is taken; the catalog create (or the alter of its path) commits before the lock is
    released. Two catalogs of different metalakes hold no common claim, so without this lock two
    concurrent creates on different replicas could each see the path free and both commit."""
    target = resolve_catalog_path(raw)
    root = catalog_root().resolve()
    if overlaps(target, root / LOCK_FILE):
        raise errors.IllegalArgument(f"Catalog property 'path' {raw!r} is reserved for gravimeta's lock file")
    with _root_lock(root, timeout_s):
        for label, other_raw in in_use():
            try:
                other = resolve_catalog_path(other_raw)
            except errors.GravitinoError:
                continue  # a catalog whose path no longer resolves (moved root, planted symlink) owns nothing here
            if overlaps(target, other):
                log.warning("sqlite catalog path %r refused: its files overlap those of catalog %s", raw, label)
                raise errors.IllegalArgument(
                    f"Catalog property 'path' {raw!r} is already used by another catalog (their files would overlap)"
                )
        failpoints.hit("catalog.location_checked", path=raw)
        yield


@contextmanager
def _root_lock(root: Path, timeout_s: float) -> Iterator[None]:
    """An exclusive flock on <root>/LOCK_FILE, polled so that a wait is bounded and visible to tests."""
    if failpoints.disabled_for_test("location_lock"):  # TEST-ONLY: no lock (tests/ha/conftest.py)
        yield
        return
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                failpoints.hit("catalog.location_busy")
                if time.monotonic() > deadline:
                    raise errors.ScopeBusy(
                        "Another catalog is being registered under the sqlite catalog root; retry later"
                    ) from None
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)  # releases the lock
