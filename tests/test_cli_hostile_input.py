"""Hostile input to the CLI (issue 29): every malformed `learn --from` file, `--source` and `--evidence-file` is
one typed error line naming FILE:LINE (and the field), exit 1 (a usage error: 2), and nothing written; output
into a closed pipe ends quietly."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from overlay_kit import cli
from overlay_kit.cli import main
from overlay_kit.store import Store

REPO = Path(__file__).resolve().parents[1]
GOOD = json.dumps(
    {
        "kind": "preference",
        "payload": {"body": "Keep replies short."},
        "section": "replies",
        "provenance": "user_instruction",
    }
)
SOURCES = "user_instruction, outcome_evidence, observed_content, unknown"


def _lesson(**over) -> str:
    return json.dumps({"kind": "preference", "payload": {"body": "Keep replies short."}, "section": "replies"} | over)


def _cli(*argv: str, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-m", "overlay_kit", *argv], capture_output=True, timeout=timeout, env=env, **kw
    )


def _deltas(db: Path) -> int:
    if not db.exists():
        return 0
    with Store.open(db) as s:
        return len(s.search(status=None, include_superseded=True))


# (bad line as bytes, what the message says, the field `where` names or None)
BAD_LINES = {
    "invalid-utf8": (b'{"kind": "preference", "payload": {"body": "caf\xff"}}', "not UTF-8: invalid byte 0xff", None),
    "overlong-utf8": (b'{"kind": "preference", "payload": {"body": "\xc0\xaf"}}', "not UTF-8: invalid byte 0xc0", None),
    "nul-byte": (b'{"kind": "preference",\x00 "payload": {}}', "not UTF-8: a NUL byte", None),
    "lone-surrogate": (
        _lesson(payload={"body": "x"}).replace('"x"', '"\\ud800"').encode(),
        "field 'payload.body': a lone surrogate \\ud800",
        "payload.body",
    ),
    "surrogate-in-key": (b'{"kind": "preference", "payload": {"\\udfff": 1}}', "lone surrogate \\udfff", "payload"),
    "deep-nesting": (b"[" * 100_000, "nested deeper than 32 levels", None),
    "deep-but-parseable": (("[" * 200 + "]" * 200).encode(), "nested deeper than 32 levels", None),
    "deep-in-payload": (
        _lesson(payload={"body": "x", "k": json.loads("[" * 40 + "]" * 40)}).encode(),
        "field 'payload.k': JSON nested deeper",
        "payload.k",
    ),
    "not-json": (b"{not json", "Expecting property name", None),
    "nan": (b'{"kind": "parameter", "payload": {"key": "k", "value": NaN}}', "NaN is not JSON", None),
    "duplicate-key": (_lesson()[:-1].encode() + b', "kind": "fact"}', "key 'kind' appears twice", None),
    "a-list": (b'["a list"]', "a lesson is a JSON object, not a list", None),
    "a-string": (b'"preference"', "a lesson is a JSON object, not a string", None),
    "unknown-key": (_lesson(colour=1).encode(), "unknown field 'colour'", "colour"),
    "missing-payload": (b'{"kind": "preference"}', "missing field 'payload'", "payload"),
    "kind-number": (_lesson(kind=3).encode(), "field 'kind' must be a string", "kind"),
    "unknown-kind": (_lesson(kind="god-mode").encode(), "unknown kind 'god-mode'; kinds are tool-hint", "kind"),
    "payload-string": (
        _lesson(payload="Keep replies short.").encode(),
        "field 'payload' must be a JSON object",
        "payload",
    ),
    "section-number": (_lesson(section=7).encode(), "field 'section' must be a string", "section"),
    "scope-empty": (_lesson(scope="").encode(), "field 'scope': '' is not a scope", "scope"),
    "evidence-number": (_lesson(evidence=[1]).encode(), "field 'evidence' must be a string or a list", "evidence"),
    "incognito-string": (
        _lesson(incognito="false").encode(),
        "field 'incognito' must be a JSON boolean (true or false), not a string",
        "incognito",
    ),
    "incognito-number": (
        _lesson(incognito=0).encode(),
        "must be a JSON boolean (true or false), not a number",
        "incognito",
    ),
    "source-god-mode": (
        _lesson(provenance="god_mode").encode(),
        f"unknown source 'god_mode' in field 'provenance'; sources are {SOURCES}",
        "provenance",
    ),
    "source-in-object": (
        _lesson(provenance={"source": "god_mode", "turns": []}).encode(),
        f"unknown source 'god_mode' in field 'provenance.source'; sources are {SOURCES}",
        "provenance.source",
    ),
    "source-missing": (
        _lesson(provenance={"turns": ["t1"]}).encode(),
        "missing field 'provenance.source'",
        "provenance.source",
    ),
    "source-number": (_lesson(provenance=1).encode(), "field 'provenance' must be a source name", "provenance"),
    "turns-not-strings": (
        _lesson(provenance={"source": "unknown", "turns": [1]}).encode(),
        "field 'provenance.turns' must be a list of strings",
        "provenance.turns",
    ),
    "provenance-extra": (
        _lesson(provenance={"source": "unknown", "trusted": True}).encode(),
        "unknown field 'provenance.trusted'",
        "provenance.trusted",
    ),
}


@pytest.mark.parametrize("name", list(BAD_LINES))
def test_a_bad_line_refuses_the_whole_file_naming_file_line_and_field(capsys, skill_dir, tmp_path, name):
    bad, why, field = BAD_LINES[name]
    src, db = tmp_path / "l.jsonl", tmp_path / "o.db"
    src.write_bytes(b"\n".join([GOOD.encode(), b"", bad, GOOD.encode()]) + b"\n")  # the bad line is line 3
    assert main(["learn", str(skill_dir), "--from", str(src), "--db", str(db)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"overlay-kit learn: error: {src}:3: ") and why in err, err
    assert not db.exists()  # read and checked before the store is opened
    assert main(["learn", str(skill_dir), "--from", str(src), "--db", str(db), "--json"]) == 1
    error = json.loads(capsys.readouterr().err)["error"]
    assert error["type"] == "InputError" and why in error["message"]
    assert error["where"] == f"{src}:3" + (f" [{field}]" if field else "")


def test_deep_nesting_through_the_real_cli_is_one_line_not_a_traceback(skill_dir, tmp_path):
    src = tmp_path / "deep.jsonl"
    src.write_text("[" * 100_000 + "\n")
    r = _cli("learn", str(skill_dir), "--from", str(src), "--db", str(tmp_path / "o.db"))
    assert r.returncode == 1 and r.stdout == b""
    assert r.stderr.decode() == f"overlay-kit learn: error: {src}:1: not a lesson: JSON nested deeper than 32 levels\n"


def test_a_bad_last_line_writes_nothing_into_an_existing_store(capsys, skill_dir, tmp_path):
    db, src = tmp_path / "o.db", tmp_path / "l.jsonl"
    src.write_text(_lesson(provenance="user_instruction", payload={"body": "one"}) + "\n")
    assert main(["learn", str(skill_dir), "--from", str(src), "--db", str(db)]) == 0
    src.write_text(
        "".join(
            _lesson(provenance="user_instruction", payload={"body": f"Rule {w}."}) + "\n"
            for w in ("alpha", "beta", "gamma")
        )
        + _lesson(incognito="false")
        + "\n"
    )
    capsys.readouterr()
    assert main(["learn", str(skill_dir), "--from", str(src), "--db", str(db)]) == 1
    assert f"{src}:4: field 'incognito'" in capsys.readouterr().err
    assert _deltas(db) == 1  # the three good lines before it were not written


def test_gate_refusals_stay_per_row(capsys, skill_dir, tmp_path):
    """A well-formed lesson the gates refuse is not a malformed file: the others are written, exit 1."""
    db, src = tmp_path / "o.db", tmp_path / "l.jsonl"
    src.write_text(GOOD + "\n" + _lesson(section="no-such-section") + "\n")
    assert main(["learn", str(skill_dir), "--from", str(src), "--db", str(db), "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert [(r["line"], r["outcome"]) for r in rows] == [(1, "staged"), (2, "refused")] and _deltas(db) == 1


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])  # with a BOM, then without
def test_utf16_is_not_utf8(capsys, skill_dir, tmp_path, encoding):
    src, db = tmp_path / "l.jsonl", tmp_path / "o.db"
    src.write_bytes((GOOD + "\n").encode(encoding))
    assert main(["learn", str(skill_dir), "--from", str(src), "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"overlay-kit learn: error: {src}:1: not UTF-8") and "UTF-16" in err and not db.exists()


def test_well_formed_extras_are_accepted(capsys, skill_dir, tmp_path):
    """A UTF-8 byte-order mark, CRLF line ends, escaped astral characters, a boolean incognito."""
    src, db = tmp_path / "l.jsonl", tmp_path / "o.db"
    astral = _lesson(
        provenance={"source": "user_instruction", "turns": ["s1"]}, payload={"body": "Sign off with \U0001f600."}
    )
    assert "\\ud83d\\ude00" in astral
    src.write_bytes(b"\xef\xbb\xbf" + f"{astral}\r\n{_lesson(incognito=True, payload={'body': 'Quiet.'})}\r\n".encode())
    assert main(["learn", str(skill_dir), "--from", str(src), "--db", str(db), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["outcome"], r["persisted"]) for r in rows] == [("staged", True), ("session_only", False)]


def test_an_oversized_file_is_refused_from_its_size(capsys, skill_dir, tmp_path):
    src = tmp_path / "big.jsonl"
    with open(src, "wb") as fh:  # sparse: the size alone must refuse it
        fh.truncate(cli.LESSON_FILE_CAP + 1)
    assert main(["learn", str(skill_dir), "--from", str(src), "--db", str(tmp_path / "o.db")]) == 1
    assert capsys.readouterr().err == (
        f"overlay-kit learn: error: {src}: {cli.LESSON_FILE_CAP + 1} bytes: over the 16 MiB cap of learn --from\n"
    )


def test_an_overlong_line_is_refused(capsys, skill_dir, tmp_path):
    src = tmp_path / "long.jsonl"
    src.write_text(GOOD + "\n" + _lesson(evidence="x" * cli.LESSON_LINE_CAP) + "\n")
    assert main(["learn", str(skill_dir), "--from", str(src), "--db", str(tmp_path / "o.db")]) == 1
    assert f"{src}:2: a line of " in (err := capsys.readouterr().err) and "over the 1 MiB cap" in err


@pytest.mark.parametrize("flag", ["--from", "--evidence-file"])
def test_a_fifo_or_directory_is_refused_without_waiting(skill_dir, tmp_path, flag):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    base = ["learn", str(skill_dir), "--db", str(tmp_path / "o.db")]
    if flag == "--evidence-file":
        base += ["--kind", "preference", "--section", "replies", "--body", "x", "--source", "user_instruction"]
    r = _cli(*base, flag, str(fifo), timeout=30)  # opening a FIFO for reading would block without a writer
    shown = {"--from": "learn --from", "--evidence-file": "--evidence-file"}[flag]
    assert r.returncode == 1 and r.stderr.decode() == (
        f"overlay-kit learn: error: {fifo}: a FIFO, not a regular file ({shown} reads regular files only)\n"
    )
    r = _cli(*base, flag, str(tmp_path), timeout=30)
    assert r.returncode == 1 and "Is a directory" in r.stderr.decode() and str(tmp_path) in r.stderr.decode()
    assert not (tmp_path / "o.db").exists()


def test_an_unknown_source_on_the_command_line_is_a_usage_error(capsys, skill_dir, tmp_path):
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "learn",
                str(skill_dir),
                "--kind",
                "preference",
                "--section",
                "replies",
                "--body",
                "x",
                "--source",
                "user",
                "--db",
                str(tmp_path / "o.db"),
            ]
        )
    err = capsys.readouterr().err
    assert (
        exc.value.code == 2
        and "argument --source: invalid choice: 'user' (choose from 'user_instruction', "
        "'outcome_evidence', 'observed_content', 'unknown')"
        in err
    )
    assert not (tmp_path / "o.db").exists()


def test_source_choices_are_the_grammar_sources():
    from overlay_kit.grammar import SOURCES

    assert tuple(cli._Sources()) == SOURCES and "god_mode" not in cli._Sources()


EVIDENCE = ["learn", "--kind", "preference", "--section", "replies", "--body", "x", "--source", "user_instruction"]


@pytest.mark.parametrize(
    "content, why, line",
    [
        (b"first line\nsecond \xff line\n", "not UTF-8: invalid byte 0xff at byte 8 of the line", 2),
        ("quoted text\n".encode("utf-16"), "not UTF-8: it starts with a UTF-16 byte-order mark", 1),
        ("quoted text\n".encode("utf-16-le"), "not UTF-8: a NUL byte at byte 2 of the line", 1),
    ],
)
def test_evidence_file_must_be_utf8(capsys, skill_dir, tmp_path, content, why, line):
    ev, db = tmp_path / "ev.txt", tmp_path / "o.db"
    ev.write_bytes(content)
    argv = [EVIDENCE[0], str(skill_dir), *EVIDENCE[1:], "--evidence-file", str(ev), "--db", str(db)]
    assert main(argv) == 1
    assert capsys.readouterr().err.startswith(f"overlay-kit learn: error: {ev}:{line}: {why}")
    assert main([*argv, "--json"]) == 1
    assert json.loads(capsys.readouterr().err)["error"]["where"] == f"{ev}:{line}"
    assert not db.exists()


def test_evidence_file_size_cap(capsys, skill_dir, tmp_path):
    ev, db = tmp_path / "ev.txt", tmp_path / "o.db"
    argv = [EVIDENCE[0], str(skill_dir), *EVIDENCE[1:], "--evidence-file", str(ev), "--db", str(db)]
    with open(ev, "wb") as fh:
        fh.truncate(cli.EVIDENCE_FILE_CAP + 1)
    assert main(argv) == 1
    assert (
        capsys.readouterr().err
        == (
            f"overlay-kit learn: error: {ev}: {cli.EVIDENCE_FILE_CAP + 1} bytes: over the "
            "1 MiB cap of --evidence-file\n"
        )
        and not db.exists()
    )
    ev.write_text("\ufeffquoted " * (cli.EVIDENCE_FILE_CAP // 10))  # under the cap, with a byte-order mark
    assert main(argv) == 0


def _many_deltas(skill_dir, db, n=300):
    src = db.parent / "many.jsonl"
    src.write_text(
        "".join(
            _lesson(provenance="user_instruction", payload={"body": f"Sign with code {code} " * 12}) + "\n"
            for code in (hashlib.sha1(str(i).encode()).hexdigest()[:16] for i in range(n))
        )
    )
    assert main(["learn", str(skill_dir), "--from", str(src), "--db", str(db)]) == 0


def _first_line_then_close(*argv: str) -> tuple[bytes, int, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "overlay_kit", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    first = proc.stdout.readline()
    proc.stdout.close()  # `| head -1`
    err = proc.stderr.read().decode()
    return first, proc.wait(timeout=60), err


@pytest.mark.parametrize("text", [False, True])
def test_output_into_a_closed_pipe_ends_quietly(capsys, skill_dir, tmp_path, text):
    db = tmp_path / "o.db"
    _many_deltas(skill_dir, db)
    capsys.readouterr()
    argv = ["deltas", "--pending", "--db", str(db)] + ([] if text else ["--json"])
    whole = _cli(*argv)
    assert whole.returncode == 0 and len(whole.stdout) > 2**17  # more than a pipe (64 KiB) and Python's buffer hold
    first, code, err = _first_line_then_close(*argv)
    assert first == whole.stdout.splitlines(keepends=True)[0]
    assert code in (0, cli.SIGPIPE_STATUS) and err == "", err  # no traceback, no "Exception ignored"


def test_a_broken_pipe_that_is_not_stdout_is_still_an_error(capsys, monkeypatch):
    def handler(args):
        raise BrokenPipeError(32, "Broken pipe")  # e.g. a server connection: not the reader of our output

    monkeypatch.setattr(cli, "cmd_deltas", handler)
    assert main(["deltas", "--db", "x.db"]) == 1
    assert capsys.readouterr().err == "overlay-kit deltas: error: [Errno 32] Broken pipe\n"
