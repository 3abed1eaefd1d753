"""Decision rules fixed before the data: every rule file reads, its notebook prints the exact file it used, and
git history shows the file (with that hash) committed before the notebook's numbers."""

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from overlay_kit.studies import rulefile
from overlay_kit.studies.rulefile import RuleFileError

ROOT = Path(__file__).resolve().parents[1]
RULES = sorted(rulefile.rules_dir().glob("*.yaml"))
GOOD = """study: {study}
version: 1
written: 2026-12-05
seen: nothing
question: Does it hold?
rule: It holds when the bound is below the target.
params: {{target: 0.05, seeds: [0, 1, 2]}}
"""


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def _history() -> bool:
    try:
        return _git("rev-parse", "--is-shallow-repository").strip() == "false"
    except (OSError, subprocess.CalledProcessError):
        return False


def _notebook(study: str) -> Path:
    """The notebook a rule judges: `notebooks/<study>.ipynb`, else the one notebook sharing its number (a second
    rule of one notebook, e.g. 10_memory_realistic judging a section of 10_memory_architectures)."""
    path = ROOT / "notebooks" / f"{study}.ipynb"
    if path.exists():
        return path
    same = sorted((ROOT / "notebooks").glob(f"{study.split('_', 1)[0]}_*.ipynb"))
    return same[0] if len(same) == 1 else path


def _outputs(notebook: Path) -> str:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return json.dumps([c.get("outputs", []) for c in cells])


@pytest.mark.parametrize("path", RULES, ids=[p.stem for p in RULES])
def test_each_rule_file_reads_and_its_notebook_prints_it(path):
    rule = rulefile.load(path.stem)
    notebook = _notebook(rule.study)
    assert notebook.exists(), f"{path.name}: no notebook {notebook.name}"
    assert rule.sha256[:12] in _outputs(notebook), (
        f"{notebook.name} does not print this rule file's stamp (re-run it: `make notebooks`)"
    )


@pytest.mark.parametrize("path", RULES, ids=[p.stem for p in RULES])
def test_each_rule_file_was_committed_before_its_numbers(path):
    """The commit that first stored the notebook printing this file's hash has, as a strict ancestor, a commit
    holding the file with exactly that hash."""
    if not _history():
        pytest.skip("needs the git history (a full clone)")
    rel = path.relative_to(ROOT).as_posix()
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    study = rulefile.load(path).study
    rule_commits = [
        c
        for c in _git("log", "--format=%H", "--", rel).split()
        if hashlib.sha256(
            subprocess.run(["git", "show", f"{c}:{rel}"], cwd=ROOT, capture_output=True, check=True).stdout
        ).hexdigest()
        == sha
    ]
    assert rule_commits, f"{rel}: this version of the rule is not committed"
    numbers = _git("log", "--format=%H", f"-S{sha[:12]}", "--", _notebook(study).relative_to(ROOT).as_posix()).split()
    if not numbers:
        pytest.skip(f"{study}: its numbers under this rule are not committed yet")
    first_numbers, first_rule = numbers[-1], rule_commits[-1]
    assert first_numbers != first_rule, f"{rel} came in the same commit as the numbers it judges"
    ancestor = subprocess.run(["git", "merge-base", "--is-ancestor", first_rule, first_numbers], cwd=ROOT)
    assert ancestor.returncode == 0, f"{rel} was committed after the numbers it judges"


def test_a_rule_file_reads_field_by_field(tmp_path):
    path = tmp_path / "99_probe.yaml"
    path.write_text(GOOD.format(study="99_probe"), encoding="utf-8")
    rule = rulefile.load(path)
    assert (rule.version, rule.param("target"), rule.param("seeds")) == (1, 0.05, [0, 1, 2])
    assert rule.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert rule.stamp().startswith(f"Rule `99_probe.yaml` v1 (sha256 {rule.sha256[:12]}), written 2026-12-05")
    with pytest.raises(RuleFileError, match="params.tau: not stated"):
        rule.param("tau")


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda t: t.replace("version: 1", "version: 0"), "version"),
        (lambda t: t.replace("version: 1", "version: true"), "version"),
        (lambda t: t.replace("written: 2026-12-05", "written: soon"), "written"),
        (lambda t: t.replace("seen: nothing\n", ""), "seen"),
        (lambda t: t.replace("seen: nothing", "seen: ''"), "seen"),
        (lambda t: t + "notes: extra\n", "notes"),
        (lambda t: t.replace("params: {target: 0.05, seeds: [0, 1, 2]}", "params: [1, 2]"), "params"),
        (lambda t: t.replace("study: 99_probe", "study: 98_other"), "study"),
        (lambda t: "- a list\n", "file"),
        (lambda t: "study: [unclosed\n", "file"),
    ],
)
def test_a_bad_rule_file_is_refused_naming_its_field(tmp_path, edit, field):
    path = tmp_path / "99_probe.yaml"
    path.write_text(edit(GOOD.format(study="99_probe")), encoding="utf-8")
    with pytest.raises(RuleFileError) as err:
        rulefile.load(path)
    assert (err.value.field, err.value.path) == (field, str(path))
