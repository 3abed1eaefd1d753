"""Issue 18, faults fail cleanly: full disk, read-only media, read verbs that must not create anything, a FIFO
in a discovery root, a YAML alias bomb. Issue 29: a FIFO, socket, device or directory at the database path, a
real full disk and a real read-only mount (tiny tmpfs mounts where allowed). (A newer schema and a GAIA
memory.db: tests/test_store.py.)"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from overlay_support import MAIL_BODY, TRUSTED, make_skill

from overlay_kit import gates
from overlay_kit import store as store_mod
from overlay_kit.cli import main
from overlay_kit.skill import Root, SkillFormatError, discover, parse_skill
from overlay_kit.store import Store, StoreError
from overlay_kit.store import core as store_core  # where Store.open connects (`_connect`)

SKILL = make_skill()


def fill_disk(store) -> None:
    """The database may not grow by one more page: SQLite reports SQLITE_FULL, as on a full disk."""
    pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
    store.conn.execute(f"PRAGMA max_page_count = {pages}")


def test_full_disk_is_a_typed_store_error_and_nothing_partial_is_written(tmp_path):
    with Store.open(tmp_path / "o.db") as store:
        kept = gates.learn(store, SKILL, "preference", {"body": "kept"}, section="replies", provenance=TRUSTED)
        staged, audited = store.counts()["staged"], len(store.audit())
        fill_disk(store)
        with pytest.raises(StoreError, match="disk is full"):
            for i in range(200):  # a few fit in the free space of the last page; then the disk is full
                gates.learn(
                    store, SKILL, "preference", {"body": "x" * 300 + str(i)}, section="replies", provenance=TRUSTED
                )
        n = store.counts()["staged"]
        assert len(store.audit()) == audited + (n - staged)  # every stored row has its audit row, no more
        with pytest.raises(StoreError, match="disk is full"):
            store.put_fact("mail", "k", "v" * 4000)
        assert store.get(kept.delta.id).payload == {"body": "kept"}
    c = sqlite3.connect(tmp_path / "o.db")
    assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    c.close()


def test_full_disk_gives_the_cli_one_line(capsys, skill_dir, tmp_path, monkeypatch):
    real = Store._migrate

    def migrate_then_fill(self, upto=None):
        out = real(self, upto)
        fill_disk(self)
        return out

    db = tmp_path / "o.db"
    assert (
        main(
            [
                "learn",
                str(skill_dir),
                "--kind",
                "preference",
                "--section",
                "replies",
                "--body",
                "ok",
                "--source",
                "user_instruction",
                "--db",
                str(db),
            ]
        )
        == 0
    )
    capsys.readouterr()
    monkeypatch.setattr(Store, "_migrate", migrate_then_fill)
    code = 0
    for i in range(100):
        code = main(
            [
                "learn",
                str(skill_dir),
                "--kind",
                "preference",
                "--section",
                "replies",
                "--body",
                "y" * 390 + str(i),
                "--source",
                "user_instruction",
                "--db",
                str(db),
            ]
        )
        if code:
            break
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "disk is full" in err and "Traceback" not in err, err


def read_only_media(monkeypatch):
    """SQLite underneath opens every file with mode=ro, as on read-only media (root ignores chmod)."""
    real = store_core._connect

    def connect(target, *, readonly):
        uri = os.path.abspath(target)
        return sqlite3.connect(f"file:{uri}?mode=ro", uri=True, isolation_level=None, check_same_thread=False)

    monkeypatch.setattr(store_core, "_connect", connect)
    return real


def test_read_only_media_reads_work_and_resolve_falls_back_with_a_note(capsys, skill_dir, tmp_path, monkeypatch):
    db = tmp_path / "o.db"
    assert (
        main(
            [
                "learn",
                str(skill_dir),
                "--kind",
                "preference",
                "--section",
                "replies",
                "--body",
                "Be brief.",
                "--source",
                "user_instruction",
                "--db",
                str(db),
            ]
        )
        == 0
    )
    capsys.readouterr()
    read_only_media(monkeypatch)
    for kw in ({}, {"readonly": True}):
        with Store.open(db, **kw) as store:  # reads work
            (d,) = store.search("mail", status="staged")
            with pytest.raises(StoreError, match="read-only"):  # a write is a typed error, nothing partial
                store.approve(d.id)
            assert store.get(d.id).status == "staged"
    assert main(["deltas", "mail", "--pending", "--db", str(db)]) == 0
    assert "Be brief." in capsys.readouterr().out
    assert main(["resolve", str(skill_dir), "--db", str(db)]) == 0  # staged: the authored base, read-only
    out, err = capsys.readouterr()
    assert out.rstrip("\n") == MAIL_BODY.rstrip("\n") and "Traceback" not in err


def test_resolve_falls_back_to_the_base_with_a_note_when_the_store_cannot_be_read(capsys, skill_dir, tmp_path):
    db = tmp_path / "o.db"
    db.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)  # a corrupt database
    assert main(["resolve", str(skill_dir), "--db", str(db)]) == 0
    out, err = capsys.readouterr()
    assert out.rstrip("\n") == MAIL_BODY.rstrip("\n") and "# store_error" in err and "authored base" in err


@pytest.mark.parametrize("verb", [["deltas"], ["deltas", "mail", "--pending"], ["facts"]])
def test_read_verbs_never_create_a_database_or_folders(capsys, tmp_path, verb):
    db = tmp_path / "not" / "there" / "o.db"
    assert main([*verb, "--db", str(db)]) == 1
    assert f"no database at {db}" in capsys.readouterr().err
    assert not (tmp_path / "not").exists()
    with pytest.raises(StoreError, match="no database at"):
        Store.open(db, create=False)
    assert not (tmp_path / "not").exists()


def test_a_fifo_named_skill_md_is_skipped_not_waited_on(tmp_path):
    root = tmp_path / "root"
    (root / "mail").mkdir(parents=True)
    (root / "mail" / "SKILL.md").write_text("---\nname: mail\ndescription: d\n---\nbody\n")
    (root / "trap").mkdir()
    os.mkfifo(root / "trap" / "SKILL.md")
    out = {}
    worker = threading.Thread(target=lambda: out.setdefault("d", discover([Root("project", root)])), daemon=True)
    t0 = time.perf_counter()
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "discovery blocked on the FIFO"
    d = out["d"]
    assert list(d.skills) == ["mail"] and time.perf_counter() - t0 < 10
    assert any("not a regular file" in str(e) for e in d.errors)


# ------------------------------------------------------------------- what sits at the database path (issue 29)


def _unblock(path) -> None:
    """Release a thread blocked opening the FIFO at `path` for reading (a writer arrives)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


@pytest.mark.parametrize("where", ["", "-wal"])
def test_a_fifo_at_the_database_path_is_refused_without_waiting(capsys, skill_dir, tmp_path, where):
    """`deltas`, `facts`, `resolve` and `Store.open(readonly=True)` used to hang on a FIFO passed as --db."""
    db = tmp_path / "o.db"
    if where:
        Store.open(db).close()
    fifo = tmp_path / f"o.db{where}"
    os.mkfifo(fifo)
    out = {}

    def calls():
        for kw in ({}, {"readonly": True}, {"create": False}):
            try:
                Store.open(db, **kw).close()
            except StoreError as exc:
                out.setdefault("errors", []).append(exc)
        out["cli"] = [main([*verb, "--db", str(db)]) for verb in (["deltas"], ["facts"], ["resolve", str(skill_dir)])]

    worker = threading.Thread(target=calls, daemon=True)
    worker.start()
    worker.join(20)
    if worker.is_alive():
        _unblock(fifo)
        pytest.fail("opening the store blocked on the FIFO")
    assert [type(e) for e in out["errors"]] == [store_mod.NotAFileError] * 3
    assert all(f"{fifo}: is a FIFO" in str(e) for e in out["errors"])
    assert out["cli"] == [1, 1, 0]  # resolve: the authored base, with the reason
    captured = capsys.readouterr()
    assert captured.err.count("is a FIFO") == 3 and "Traceback" not in captured.err
    assert MAIL_BODY.strip() in captured.out


@pytest.mark.parametrize("kind", ["socket", "device", "directory"])
def test_a_socket_device_or_directory_at_the_database_path_is_refused(tmp_path, kind):
    import socket

    db = tmp_path / "o.db"
    if kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(db))
    elif kind == "device":
        os.symlink("/dev/null", db)
    else:
        db.mkdir()
    for kw in ({}, {"readonly": True}):
        with pytest.raises(
            store_mod.NotAFileError,
            match={"socket": "is a socket", "device": "character device", "directory": "is a directory"}[kind],
        ):
            Store.open(db, **kw)
    if kind == "socket":
        sock.close()


class _Tmpfs:
    """A real, tiny tmpfs mounted at `path` (root only; the test is skipped where mounting is not allowed)."""

    def __init__(self, path, size="1m"):
        import subprocess

        self.path, self.run = path, subprocess.run
        path.mkdir()
        if (
            os.geteuid() != 0
            or self.run(
                ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True
            ).returncode
        ):
            pytest.skip("cannot mount a tmpfs here")

    def fill(self) -> None:
        fd = os.open(self.path / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"\0" * 65536)
        except OSError:
            pass
        finally:
            os.close(fd)

    def read_only(self) -> None:
        self.run(["mount", "-o", "remount,ro", str(self.path)], check=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.run(["umount", "-l", str(self.path)], capture_output=True)


def _one_lesson_in(folder) -> Path:
    db = folder / "o.db"
    with Store.open(db) as store:
        gates.learn(store, SKILL, "preference", {"body": "Be brief."}, section="replies", provenance=TRUSTED)
    return db


def test_a_full_disk_is_named_disk_full_not_an_unusable_database(capsys, skill_dir, tmp_path):
    with _Tmpfs(tmp_path / "mnt") as mnt:
        db = _one_lesson_in(mnt.path)
        mnt.fill()
        with pytest.raises(store_mod.DiskFullError, match="disk full") as err:
            Store.open(db)
        assert "not a usable" not in str(err.value) and str(db) in str(err.value)
        with Store.open(db, readonly=True) as store:  # reads still work
            assert [d.text for d in store.search()] == ["Be brief."]
        assert main(["deltas", "mail", "--pending", "--db", str(db)]) == 0  # falls back to a read-only open
        assert "Be brief." in capsys.readouterr().out
        assert (
            main(
                [
                    "learn",
                    str(skill_dir),
                    "--kind",
                    "preference",
                    "--section",
                    "replies",
                    "--body",
                    "More.",
                    "--source",
                    "user_instruction",
                    "--db",
                    str(db),
                ]
            )
            == 1
        )
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "disk full" in err and "not a usable" not in err


def test_sqlite_full_at_open_is_disk_full_too(tmp_path, monkeypatch):
    """Where no tmpfs can be mounted: SQLite's SQLITE_FULL from the first read of the file, as a full disk gives."""
    db = tmp_path / "o.db"
    Store.open(db).close()
    real = store_core._connect

    class Full:
        def __init__(self, conn):
            self.conn = conn

        def execute(self, sql, *args):
            if sql.startswith("PRAGMA quick_check"):
                raise sqlite3.OperationalError("database or disk is full")
            return self.conn.execute(sql, *args)

        def __getattr__(self, name):
            return getattr(self.conn, name)

    monkeypatch.setattr(store_core, "_connect", lambda target, *, readonly: Full(real(target, readonly=readonly)))
    with pytest.raises(store_mod.DiskFullError, match="disk full"):
        Store.open(db)


def test_a_read_only_mount_is_named_read_only_and_reads_still_work(capsys, skill_dir, tmp_path):
    with _Tmpfs(tmp_path / "mnt") as mnt:
        db = _one_lesson_in(mnt.path)
        mnt.read_only()
        with pytest.raises(store_mod.ReadOnlyError, match=f"read-only: cannot write {mnt.path}"):
            Store.open(db)
        with Store.open(db, readonly=True) as store:
            assert [d.text for d in store.search()] == ["Be brief."] and store.integrity_notes == []
        assert main(["deltas", "mail", "--pending", "--db", str(db)]) == 0
        assert "Be brief." in capsys.readouterr().out
        assert (
            main(
                [
                    "learn",
                    str(skill_dir),
                    "--kind",
                    "preference",
                    "--section",
                    "replies",
                    "--body",
                    "More.",
                    "--source",
                    "user_instruction",
                    "--db",
                    str(db),
                ]
            )
            == 1
        )
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "read-only: cannot write" in err and "not a usable" not in err


BOMB = (
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n'
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
)


@pytest.mark.parametrize(
    "block",
    [
        BOMB,
        'a: &a "' + "x" * 5000 + '"\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n'
        "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n",
    ],
)
def test_a_yaml_alias_bomb_is_refused_quickly(block):
    text = "---\nname: bomb\ndescription: x\nmetadata:\n  x:\n" + "".join(f"    {ln}\n" for ln in block.splitlines())
    text += "---\nbody\n"
    assert len(text) < 60_000
    t0 = time.perf_counter()
    with pytest.raises(SkillFormatError, match="alias bomb"):
        parse_skill(text, None)
    assert time.perf_counter() - t0 < 1.0


def test_ordinary_yaml_aliases_still_load():
    text = "---\nname: ok\ndescription: x\nmetadata:\n  x: &a {k: 1}\n  y: *a\n---\nbody\n"
    skill, problems = parse_skill(text, None)
    assert not problems and skill.frontmatter["metadata"]["y"] == {"k": 1}
