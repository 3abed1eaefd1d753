"""CLI conventions (issue 31): `--version`, `python -m overlay_kit`, errors as one JSON line under `--json`, and a
not-found skill name answered with close names, the roots searched and how to add one."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import overlay_kit
from overlay_kit.cli import main
from overlay_kit.skill import default_roots

REPO = Path(__file__).resolve().parents[1]
SKILLS = REPO / "datasets" / "skills"
CONSOLE = Path(sys.executable).parent / "overlay-kit"


def _run(*cmd: str) -> tuple[int, str, str]:
    env = dict(os.environ, OVERLAY_KIT_SKILLS=str(SKILLS))
    out = subprocess.run(list(cmd), capture_output=True, text=True, cwd=REPO, env=env)
    return out.returncode, out.stdout, out.stderr


def test_version_prints_the_installed_distribution_version():
    assert _run(str(CONSOLE), "--version") == (0, f"overlay-kit {importlib.metadata.version('overlay_kit')}\n", "")


def test_version_falls_back_to_the_package_version(monkeypatch, capsys):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    monkeypatch.setattr(overlay_kit, "__version__", "9.8.7", raising=False)
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == "overlay-kit 9.8.7\n"


@pytest.mark.parametrize(
    "argv,code",
    [
        (["--version"], 0),
        (["validate", "datasets/skills/triage-inbox"], 0),
        (["anchors", "triage-inbx", "--json"], 1),
        (["anchors", "triage-inbx"], 1),
        (["validate"], 2),
    ],
    ids=["version", "ok", "json-error", "error", "usage"],
)
def test_python_m_overlay_kit_is_the_console_script(argv, code):
    via_module = _run(sys.executable, "-m", "overlay_kit", *argv)
    assert via_module == _run(str(CONSOLE), *argv) and via_module[0] == code


def test_an_error_under_json_is_one_json_line_on_stderr(monkeypatch, capsys):
    monkeypatch.setenv("OVERLAY_KIT_SKILLS", str(SKILLS))
    bad = REPO / "tests" / "fixtures" / "bad_skills" / "bad-tier"
    assert main(["anchors", str(bad), "--json"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert json.loads(err) == {
        "error": {
            "type": "SkillValidationError",
            "message": "security_tier 'trusted' must be one of verified, community, experimental",
            "where": f"{bad / 'SKILL.md'}:6 [metadata.gaia.security_tier]",
        }
    }

    assert main(["anchors", "triage-inbx", "--json"]) == 1
    error = json.loads(capsys.readouterr().err)["error"]
    assert (error["type"], error["where"]) == ("SkillError", "triage-inbx") and "did you mean" in error["message"]


def test_store_and_file_errors_under_json_name_where(tmp_path, capsys):
    db = tmp_path / "missing.db"
    assert main(["deltas", "--db", str(db), "--json"]) == 1
    assert json.loads(capsys.readouterr().err) == {
        "error": {"type": "StoreError", "message": f"no database at {db}", "where": str(db)}
    }
    lessons = tmp_path / "none.jsonl"
    assert main(["learn", str(SKILLS / "triage-inbox"), "--from", str(lessons), "--db", str(db), "--json"]) == 1
    assert json.loads(capsys.readouterr().err)["error"] == {
        "type": "FileNotFoundError",
        "message": "No such file or directory",
        "where": str(lessons),
    }


def test_without_json_an_error_stays_one_plain_line(tmp_path, capsys):
    db = tmp_path / "missing.db"
    assert main(["deltas", "--db", str(db)]) == 1
    assert capsys.readouterr() == ("", f"overlay-kit deltas: error: no database at {db}\n")


def test_a_name_not_found_suggests_close_names_and_says_where_names_are_looked_up(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("OVERLAY_KIT_SKILLS", str(SKILLS))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert main(["anchors", "triage-inbx"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert (
        "no discovered skill named 'triage-inbx' (did you mean 'triage-inbox'?); roots searched in order: "
        f"project .gaia/skills (absent), env {SKILLS}, user {tmp_path}/.gaia/skills (absent), "
    ) in err
    searched = ", ".join(f"{r.label} {r.path}" + ("" if r.path.is_dir() else " (absent)") for r in default_roots())
    assert searched in err and "set $OVERLAY_KIT_SKILLS to one or more directories (separated by ':')" in err

    assert main(["anchors", "zzzz"]) == 1
    assert "did you mean" not in capsys.readouterr().err  # nothing close: no guess


def test_a_bundled_example_is_found_by_name_from_any_directory(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("OVERLAY_KIT_SKILLS", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert main(["anchors", "triage-inbox"]) == 0
    assert main(["anchors", str(SKILLS / "triage-inbox")]) == 0
    assert main(["anchors", "triage-inbx"]) == 1  # the bundled root is searched last, and named
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"bundled {SKILLS}; to add a root" in err, err
    assert err.rstrip().endswith("searched after the project and agent roots and before the user's own"), err
