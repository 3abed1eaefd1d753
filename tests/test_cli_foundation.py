"""`overlay-kit validate` and `overlay-kit anchors`, in-process and through the installed console script."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_fixtures import run

from overlay_kit.anchor import parse, split_lines
from overlay_kit.cli import main
from overlay_kit.skill import load_skill

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "datasets" / "skills"
BAD = REPO / "tests" / "fixtures" / "bad_skills"
EXAMPLE_DIRS = sorted(str(p) for p in EXAMPLES.iterdir() if (p / "SKILL.md").is_file())
BAD_DIRS = sorted(str(p) for p in BAD.iterdir())
SCRIPT = Path(sys.executable).with_name("overlay-kit")  # .venv/bin/overlay-kit
ROW_KEYS = ["slug", "heading", "level", "digest", "start_line", "end_line"]


# -------------------------------------------------------------------------------------------- validate


def test_validate_passes_on_every_example(capsys):
    code, out, err = run(capsys, "validate", *EXAMPLE_DIRS)
    assert (code, err) == (0, "")
    assert out.splitlines() == [f"ok: {p}" for p in EXAMPLE_DIRS]


def test_validate_fails_with_located_errors_on_every_bad_fixture(capsys):
    code, out, _ = run(capsys, "validate", *BAD_DIRS)
    assert code == 1
    for d in BAD_DIRS:
        assert re.search(rf"^error: {re.escape(d)}/SKILL\.md:\d+", out, re.M), d


def test_validate_json_reports_each_path_with_lines_and_fields(capsys):
    code, out, _ = run(
        capsys, "validate", "--json", EXAMPLE_DIRS[0], str(BAD / "bad-permission"), str(BAD / "non-utf8")
    )
    assert code == 1
    report = json.loads(out)
    assert [(r["path"], r["ok"]) for r in report] == [
        (EXAMPLE_DIRS[0], True),
        (str(BAD / "bad-permission"), False),
        (str(BAD / "non-utf8"), False),
    ]
    assert report[0]["errors"] == []
    assert [(e["line"], e["field"]) for e in report[1]["errors"]] == [
        (8, "metadata.gaia.permissions"),
        (9, "metadata.gaia.permissions"),
    ]
    assert report[2]["errors"][0]["line"] == 6 and "UTF-8" in report[2]["errors"][0]["message"]


def test_validate_json_on_valid_input_exits_zero(capsys):
    code, out, _ = run(capsys, "validate", "--json", *EXAMPLE_DIRS)
    assert code == 0 and all(r["ok"] and r["errors"] == [] for r in json.loads(out))


def test_validate_needs_a_path(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["validate"])
    assert exc.value.code == 2


# --------------------------------------------------------------------------------------------- anchors


@pytest.mark.parametrize("path", EXAMPLE_DIRS, ids=lambda p: Path(p).name)
def test_anchors_json_rows_have_the_documented_fields_and_unique_slugs(capsys, path):
    code, out, _ = run(capsys, "anchors", path, "--json")
    assert code == 0
    data = json.loads(out)
    skill = load_skill(path)
    assert (data["skill"], data["path"]) == (skill.name, str(skill.path))
    rows = data["sections"]
    assert all(list(r) == ROW_KEYS for r in rows)
    assert len({r["slug"] for r in rows}) == len(rows)
    assert [r["digest"] for r in rows] == [s.digest for s in parse(skill.body)]
    assert all(re.fullmatch(r"[0-9a-f]{16}", r["digest"]) for r in rows)
    # line numbers are file lines: each headed section starts on the line that holds its heading
    file_lines = split_lines((EXAMPLES / skill.name / "SKILL.md").read_bytes().decode())
    for r in rows:
        assert r["start_line"] >= skill.body_start_line and r["end_line"] <= len(file_lines)
        if r["level"]:
            assert r["heading"].split()[0] in file_lines[r["start_line"] - 1]


def test_anchors_text_lists_every_slug_in_order(capsys):
    code, out, _ = run(capsys, "anchors", str(EXAMPLES / "triage-inbox"))
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == [
        "_preamble",
        "triage-inbox",
        "when-to-use",
        "reading-the-inbox",
        "classifying",
        "escalation",
        "drafting-replies",
        "invites-and-scheduling",
        "cleaning-up",
        "report",
    ]
    escalation = next(line for line in out.splitlines() if line.startswith("escalation "))
    assert " L2 " in escalation and escalation.rstrip().endswith("Escalation")


def test_anchors_accepts_a_skill_md_file_and_a_discovered_name(capsys, tmp_path, monkeypatch):
    code, by_file, _ = run(capsys, "anchors", str(EXAMPLES / "web-research" / "SKILL.md"), "--json")
    assert code == 0
    shutil.copytree(EXAMPLES / "web-research", tmp_path / ".gaia" / "skills" / "web-research")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    code, by_name, _ = run(capsys, "anchors", "web-research", "--json")
    assert code == 0
    assert json.loads(by_name)["sections"] == json.loads(by_file)["sections"]


def test_anchors_on_a_bad_skill_or_unknown_name_fails_with_a_located_message(capsys, tmp_path, monkeypatch):
    code, out, err = run(capsys, "anchors", str(BAD / "duplicate-key"))
    assert (code, out) == (1, "")
    assert f"{BAD / 'duplicate-key' / 'SKILL.md'}:5" in err
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    code, _, err = run(capsys, "anchors", "no-such-skill")
    assert code == 1 and "no-such-skill" in err


# ------------------------------------------------------------------------------------- console script


def test_installed_console_script_matches_the_in_process_cli(capsys):
    assert SCRIPT.is_file(), f"console script missing: {SCRIPT} (run `make venv`)"
    target = str(EXAMPLES / "meeting-notes")
    done = subprocess.run(
        [str(SCRIPT), "anchors", target, "--json"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    code, out, _ = run(capsys, "anchors", target, "--json")
    assert code == 0 and json.loads(done.stdout) == json.loads(out)
    bad = subprocess.run(
        [str(SCRIPT), "validate", str(BAD / "binary")], capture_output=True, text=True, timeout=120, check=False
    )
    assert bad.returncode == 1 and f"{BAD / 'binary' / 'SKILL.md'}:3" in bad.stdout
