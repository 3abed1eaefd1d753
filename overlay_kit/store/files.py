"""The database file and its medium: where it is (`default_db_path`), what a path holds before anything opens it
for writing (a regular SQLite file, `_regular_file`; an overlay database this version may use, `_inspect`,
`_schema_problem`, `_foreign_objects`; read with `_peek`, which creates no file), and what a failure of the
medium was (`_fault`, `_fault_error`: disk full, read-only, I/O). `read_gaia_deltas` reads another program's
rows without changing a byte."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

from .errors import DiskFullError, NotAFileError, ReadOnlyError, SchemaObjectError, StoreError
from .schema import _SQLITE_OWN, MIGRATIONS, _normal_sql, _own_objects

__all__ = ["default_db_path", "read_gaia_deltas"]

SQLITE_MAGIC = b"SQLite format 3\x00"


def default_db_path() -> Path:
    """`$OVERLAY_KIT_DB`, else `~/.overlay_kit/overlay.db`."""
    env = os.environ.get("OVERLAY_KIT_DB")
    return Path(env).expanduser() if env else Path.home() / ".overlay_kit" / "overlay.db"


def _inspect(path: Path) -> bool:
    """Look before writing: refuse (with no byte changed, no -wal/-shm created) a newer overlay_kit schema,
    another program's database, or a schema object overlay_kit did not create (`_schema_problem`). Opens with
    `immutable=1` unless a WAL is present, which `mode=ro` reads."""
    try:
        conn = _peek(path)
    except sqlite3.Error:
        return False  # the normal open reports it
    try:
        _schema_problem(conn, path)
        return True
    except sqlite3.DatabaseError:
        return False  # corrupt: quick_check in the normal open names it
    finally:
        conn.close()


def _schema_problem(conn: sqlite3.Connection, path: Path | str) -> None:
    """Raise when the file is not an overlay database this version may use: a newer schema, another program's
    tables, or objects overlay_kit did not create (`SchemaObjectError` naming them). An empty file passes."""
    tables = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "schema_history" in tables:
        newer = sorted(
            {v for (v,) in conn.execute("SELECT version FROM schema_history")} - {m.version for m in MIGRATIONS}
        )
        if newer:
            raise StoreError(
                f"{path}: written by a newer overlay_kit (schema {newer}); refusing to open it "
                "with this version (the file is untouched)"
            )
        foreign = _foreign_objects(conn)
        if foreign:
            raise SchemaObjectError(
                f"{path}: holds schema objects overlay_kit did not create: "
                f"{', '.join(foreign[:8])}{' …' if len(foreign) > 8 else ''}; refusing to "
                "open it (a trigger or view planted in the file would run inside the "
                "store's reads and writes; the file is untouched)"
            )
    elif tables:
        raise StoreError(
            f"{path}: not an overlay_kit database ({_foreign(tables)}); overlay_kit never "
            "alters another program's schema — give it its own --db (read GAIA's deltas with "
            "overlay_kit.store.read_gaia_deltas)"
        )


def _peek(path: Path) -> sqlite3.Connection:
    """A read-only connection that creates no file: `immutable=1`, or `mode=ro` when a WAL holds data."""
    try:
        wal_data = os.stat(str(path) + "-wal").st_size > 0
    except FileNotFoundError:  # none, or the last connection of another process just removed it
        wal_data = False
    uri = Path(path).resolve().as_uri() + ("?mode=ro" if wal_data else "?immutable=1")
    return sqlite3.connect(uri, uri=True, isolation_level=None)


def _foreign(tables: set[str]) -> str:
    if "schema_version" in tables and ({"knowledge", "conversations", "procedures"} & tables):
        return "a GAIA memory.db"
    return "tables " + ", ".join(sorted(tables)[:6]) + ("…" if len(tables) > 6 else "")


_FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _regular_file(target: str) -> bool:
    """Whether the database exists; `NotAFileError` when it, or its -wal, -shm or -journal file, is anything
    but a regular file (SQLite would block on a FIFO, or read a device): looked at with stat, never opened."""
    exists = False
    for path in (target, target + "-wal", target + "-shm", target + "-journal"):
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise StoreError(f"{path}: cannot look at it ({exc.strerror or exc})") from exc
        if not stat.S_ISREG(mode):
            what = next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")
            raise NotAFileError(f"{path}: is {what}, not an overlay database file; refusing to open it")
        exists = exists or path == target
    return exists


def _fault(exc: BaseException) -> bool:
    """A failure of the medium, not of the statement: disk full, read-only, I/O, locked, cannot open."""
    return isinstance(exc, sqlite3.OperationalError) or (
        isinstance(exc, sqlite3.DatabaseError)
        and not isinstance(exc, (sqlite3.IntegrityError, sqlite3.ProgrammingError))
    )


def _why(exc: BaseException) -> str:
    text = str(exc)
    for needle, say in (
        ("disk is full", "disk full: the disk is full"),
        ("readonly", "the database is read-only"),
        ("read-only", "the database is read-only"),
        ("disk I/O", "disk I/O error"),
        ("locked", "the database is locked by another process"),
    ):
        if needle in text:
            return f"{say} ({text})"
    return text


def _fault_error(path: str, exc: BaseException, tail: str = "") -> StoreError:
    """The typed error for a fault of the medium: `DiskFullError` ("disk full"), `ReadOnlyError` ("read-only:
    cannot write PATH"), else a `StoreError` saying what SQLite said."""
    text = str(exc)
    code = getattr(exc, "sqlite_errorcode", None)
    if code == getattr(sqlite3, "SQLITE_FULL", 13) or "disk is full" in text:
        return DiskFullError(f"{path}: disk full: the disk is full ({text}){tail}")
    if "disk I/O" in text and _no_space(path):  # SQLite reports a -shm it cannot grow as an I/O error
        return DiskFullError(f"{path}: disk full: the disk is full, cannot write {path} ({text}){tail}")
    if code in (getattr(sqlite3, "SQLITE_READONLY", 8),) or "readonly" in text or "read-only" in text:
        return ReadOnlyError(f"{path}: read-only: cannot write {path} ({text}){tail}")
    return StoreError(f"{path}: {_why(exc)}{tail}")


def _no_space(path: str) -> bool:
    """Whether the device holding `path` has (almost) no room left: less than 64 KiB."""
    try:
        st = os.statvfs(os.path.dirname(os.path.abspath(path)))
    except (OSError, AttributeError):
        return False
    return st.f_bavail * st.f_frsize < 64 * 1024


def _unwritable(target: str, exists: bool) -> str | None:
    """Why a writable open of `target` cannot write (its folder or the file is read-only: a read-only mount, or
    permissions), else None. SQLite needs the folder too, for the -wal and -shm files."""
    folder = os.path.dirname(os.path.abspath(target))
    for path in (target, folder) if exists else (folder,):
        if not os.access(path, os.W_OK):
            return path
    return None


def _foreign_objects(conn: sqlite3.Connection) -> list[str]:
    """The schema objects in `conn`'s file that overlay_kit did not create, each named: any view, any other
    name, and a trigger of one of our names whose text is not ours (a trigger runs inside our writes). An
    object of ours that is missing is no finding (a file from an older version may lack an index)."""
    own, found = _own_objects(), []
    for kind, name, table, sql in conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"):
        mine = own.get(name)
        if mine is None:
            m = _SQLITE_OWN.fullmatch(name)
            if m and (m.group(1) is None or m.group(1) in own):
                continue
            found.append(f"{kind} {name!r}" + (f" on {table!r}" if table and table != name else ""))
        elif mine[0] != kind or (kind == "trigger" and _normal_sql(sql or "") != mine[1]):
            found.append(
                f"{kind} {name!r}"
                + (f" on {table!r}" if table and table != name else "")
                + " (not as overlay_kit creates it)"
            )
    return found


def read_gaia_deltas(path: str | os.PathLike) -> list[dict]:
    """GAIA's own `skill_deltas` rows (amd-gaia ≥ 0.25 memory.db), read without changing a byte of the file.
    Their kinds (replace_section, replace_snippet, drop_section) edit the authored body, which this overlay
    never does, so they are returned for inspection, not imported as deltas."""
    p = Path(path)
    if not p.is_file():
        raise StoreError(f"no database at {p}")
    conn = _peek(p)
    try:
        cols = [r[1] for r in conn.execute("PRAGMA table_info(skill_deltas)")]
        if not cols:
            return []
        rows = conn.execute(f"SELECT {', '.join(cols)} FROM skill_deltas ORDER BY created_at, rowid").fetchall()
        return [dict(zip(cols, r)) for r in rows]
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{p}: {exc}") from exc
    finally:
        conn.close()
