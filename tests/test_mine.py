"""`overlay_kit.mine` and `overlay-kit mine` on repositories scripted here (git init, commits with fixed dates):
versions and renames, the section policy's decisions, edit classes, rule events and their fates, bare clones,
the CLI's records and its error paths."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from overlay_kit import cli, mine
from overlay_kit.mine import MineError

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

V0 = "# Project\n\nIntro text.\n\n## Style\n\n- Use black.\n- Keep lines short.\n\n## Testing\n\n- Run pytest.\n"
E1 = "- Never commit secrets to the repository.\n"
E1B = "- Never commit secrets or tokens to the repository.\n"
E2 = "- Always run the targeted tests only.\n"
E3 = "- Use tmp_path for fixtures.\n"
E4 = "- Prefer frozen dataclasses.\n"
E5 = "- Document every public function.\n"


def _claude(style: list[str], tests: list[str], *, intro="Intro text.", heading="Testing") -> str:
    return f"# Project\n\n{intro}\n\n## Style\n\n" + "".join(style) + f"\n## {heading}\n\n" + "".join(tests)


STYLE = ["- Use black.\n", "- Keep lines short.\n"]
CLAUDE = [  # (message, text): the history of CLAUDE.md, one scripted edit per commit
    ("v0", V0),
    ("v1 append a bullet", _claude(STYLE + [E1], ["- Run pytest.\n"])),
    ("v2 append to a small section", _claude(STYLE + [E1], ["- Run pytest.\n", E2])),
    ("v3 reword", _claude(STYLE + [E1B], ["- Run pytest.\n", E2])),
    ("v4 move to another section", _claude(STYLE + [E1B, E2], ["- Run pytest.\n"])),
    ("v5 heading rename", _claude(STYLE + [E1B, E2], ["- Run pytest.\n"], heading="Tests")),
    ("v6 two rules", _claude(STYLE + [E1B, E2, E4], ["- Run pytest.\n", E3], heading="Tests")),
    (
        "v7 delete a rule, edit elsewhere",
        _claude(STYLE + [E1B, E2, E4], ["- Run pytest.\n"], heading="Tests", intro="Intro text, revised."),
    ),
    (
        "v8 edit the rule's section",
        _claude(
            ["- Use ruff format.\n", STYLE[1], E1B, E2, E4],
            ["- Run pytest.\n"],
            heading="Tests",
            intro="Intro text, revised.",
        ),
    ),
]
AGENTS = _claude(
    ["- Use ruff format.\n", STYLE[1], E1B, E2, E4, E5],
    ["- Run pytest.\n"],
    heading="Tests",
    intro="Intro text, revised.",
)

FM = "---\nname: demo\ndescription: {d}\n---\n"
SKILL = [
    (
        "s0",
        FM.format(d="A demo.") + "# Demo\n\n## Usage\n\nRun it with the input file and read the output.\n\n"
        "## Notes\n\nNone yet.\n",
    ),
    (
        "s1 frontmatter only",
        FM.format(d="A demo skill.") + "# Demo\n\n## Usage\n\nRun it with the input file and "
        "read the output.\n\n## Notes\n\nNone yet.\n",
    ),
    (
        "s2 section added",
        FM.format(d="A demo skill.") + "# Demo\n\n## Usage\n\nRun it with the input file and read "
        "the output.\n\n## Notes\n\nNone yet.\n\n## Limits\n\n"
        "Small inputs only, under one megabyte.\n",
    ),
    (
        "s3 section removed",
        FM.format(d="A demo skill.") + "# Demo\n\n## Usage\n\nRun it with the input file and "
        "read the output.\n\n## Limits\n\nSmall inputs only, "
        "under one megabyte.\n",
    ),
    (
        "s4 whitespace",
        FM.format(d="A demo skill.") + "# Demo\n\n## Usage\n\nRun it with the input file and   read "
        "the output.  \n\n## Limits\n\nSmall inputs only, under one "
        "megabyte.\n",
    ),
    (
        "s5 sections moved",
        FM.format(d="A demo skill.") + "# Demo\n\n## Limits\n\nSmall inputs only, under one "
        "megabyte.\n\n## Usage\n\nRun it with the input file and   "
        "read the output.  \n",
    ),
    ("s6 rewrite", FM.format(d="A demo skill.") + "# Other\n\nCompletely different words about something else.\n"),
]


def _git(repo: Path, *args: str, when: int = 0) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_DATE": f"@{1700000000 + when * 60} +0000",
        "GIT_COMMITTER_DATE": f"@{1700000000 + when * 60} +0000",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env, text=True).stdout


def _commit(repo: Path, files: dict[str, str | bytes | None], message: str, when: int) -> None:
    for name, text in files.items():
        p = repo / name
        if text is None:
            _git(repo, "rm", "-q", name)
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text if isinstance(text, bytes) else text.encode())
        _git(repo, "add", name)
    _git(repo, "commit", "-q", "--allow-empty", "-m", message, when=when)


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("fixture") / "proj"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    t = 0
    for (msg, text), (smsg, stext) in zip(CLAUDE, SKILL + [(None, None)] * 9):
        files = {"CLAUDE.md": text}
        if smsg is not None:
            files["skills/demo/SKILL.md"] = stext
        _commit(repo, files, msg, t := t + 1)
    _commit(repo, {"README.md": "readme\n"}, "unrelated", t := t + 1)
    _git(repo, "mv", "CLAUDE.md", "AGENTS.md")
    _commit(repo, {}, "v9 rename the file", t := t + 1)
    _commit(repo, {"AGENTS.md": AGENTS}, "v10 append after the rename", t := t + 1)
    _commit(repo, {"GEMINI.md": "# G\n\n- one\n"}, "g0", t := t + 1)
    _commit(repo, {"GEMINI.md": b"# G\n\n- one\n- caf\xe9\n"}, "g1 latin-1", t := t + 1)
    _commit(repo, {"GEMINI.md": "# G\n\n- one\n- two\n"}, "g2", t := t + 1)
    _commit(repo, {".cursor/rules/py.mdc": "---\nglobs: '*.py'\n---\n- Type everything.\n"}, "c0", t := t + 1)
    _commit(repo, {".cursor/rules/py.mdc": None}, "c1 delete", t := t + 1)
    return repo


@pytest.fixture(scope="module")
def result(history):
    return mine.mine([history])


def _file(result, path):
    return next(f for f in result.files if f.path == path)


def _pairs(result, file_id):
    return [p for p in result.pairs if p.file == file_id]


# ------------------------------------------------------------------------------------------ files and versions


def test_files_renames_and_versions(result):
    assert [(f.id, f.path, f.paths, f.pattern, f.deleted, len(f.versions)) for f in result.files] == [
        ("proj:CLAUDE.md", "AGENTS.md", ("CLAUDE.md", "AGENTS.md"), "AGENTS.md", False, 10),
        ("proj:skills/demo/SKILL.md", "skills/demo/SKILL.md", ("skills/demo/SKILL.md",), "SKILL.md", False, 7),
        ("proj:GEMINI.md", "GEMINI.md", ("GEMINI.md",), "GEMINI.md", False, 2),
        (
            "proj:.cursor/rules/py.mdc",
            ".cursor/rules/py.mdc",
            (".cursor/rules/py.mdc",),
            ".cursor/rules/*.mdc",
            True,
            1,
        ),
    ]
    claude = _file(result, "AGENTS.md")
    assert [v.path for v in claude.versions] == ["CLAUDE.md"] * 9 + ["AGENTS.md"]
    assert [v.text for v in claude.versions] == [t for _, t in CLAUDE] + [AGENTS]  # the texts, through the API
    assert _file(result, "GEMINI.md").skipped == {"not-utf-8": 1}
    assert result.notes == {"proj: not-utf-8": 1}
    assert result.repos[0]["commits"] == 17 and result.repos[0]["repo"] == "proj"


def test_frontmatter_is_split_off_for_skills_and_cursor_rules(result):
    skill = _file(result, "skills/demo/SKILL.md")
    assert skill.versions[0].frontmatter == "name: demo\ndescription: A demo.\n"
    assert skill.versions[0].body.startswith("# Demo\n")
    rule = _file(result, ".cursor/rules/py.mdc")
    assert rule.versions[0].body == "- Type everything.\n"
    claude = _file(result, "AGENTS.md")
    assert claude.versions[0].frontmatter == "" and claude.versions[0].body == V0


# ------------------------------------------------------------------------------------------ pairs


def test_edit_classes_and_changes(result):
    claude = [(p.old, p.new, p.edit_class, p.changes) for p in _pairs(result, "proj:CLAUDE.md")]
    assert claude == [
        (0, 1, "append-only", ("append",)),
        (1, 2, "append-only", ("append",)),
        (2, 3, "in-section-edit", ("edit",)),
        (3, 4, "in-section-edit", ("append", "edit")),
        (4, 5, "heading-rename", ("rename",)),
        (5, 6, "append-only", ("append",)),
        (6, 7, "in-section-edit", ("edit",)),
        (7, 8, "in-section-edit", ("edit",)),
        (8, 9, "append-only", ("append",)),
    ]
    skill = [(p.edit_class, p.changes) for p in _pairs(result, "proj:skills/demo/SKILL.md")]
    assert skill == [
        ("frontmatter-only", ("frontmatter",)),
        ("section-added", ("add",)),
        ("section-removed", ("remove",)),
        ("whitespace-only", ()),
        ("section-moved", ("move",)),
        ("rewrite", ("add", "remove")),
    ]


def test_section_decisions(result):
    pairs = _pairs(result, "proj:CLAUDE.md")
    decided = [[(s.section, s.state, s.change, s.target) for s in p.sections] for p in pairs]
    assert decided[0] == [
        ("project", "clean", "unchanged", "project"),
        ("style", "stale", "append", "style"),
        ("testing", "clean", "unchanged", "testing"),
    ]
    # one bullet grows a one-bullet section past the policy's body similarity: the product orphans it, the
    # miner still sees an append under the same heading
    assert decided[1][2] == ("testing", "orphaned", "append", "testing")
    assert decided[4] == [
        ("project", "clean", "unchanged", "project"),
        ("style", "clean", "unchanged", "style"),
        ("testing", "orphaned", "rename", "tests"),
    ]
    assert pairs[4].added == () and pairs[4].slugs_changed
    assert [(p.lines_added, p.lines_removed, p.events) for p in pairs] == [
        (1, 0, 1),
        (1, 0, 1),
        (1, 1, 0),
        (1, 1, 0),
        (0, 0, 0),
        (2, 0, 2),
        (1, 2, 0),
        (1, 1, 0),
        (1, 0, 1),
    ]
    skill = _pairs(result, "proj:skills/demo/SKILL.md")
    assert skill[0].counts() == {"clean": 3} and not skill[0].body_changed and skill[0].frontmatter_changed
    assert skill[1].added == ("limits",)
    assert [(s.section, s.state, s.change) for s in skill[2].sections] == [
        ("demo", "clean", "unchanged"),
        ("usage", "clean", "unchanged"),
        ("notes", "orphaned", "remove"),
        ("limits", "clean", "unchanged"),
    ]
    assert [(s.section, s.moved) for s in skill[4].sections] == [("demo", False), ("usage", True), ("limits", False)]
    assert skill[5].counts() == {"orphaned": 3} and skill[5].added == ("other",)


# ------------------------------------------------------------------------------------------ rule events


def _events(result):
    return {e.text: e for e in result.events}


def test_rule_events_where_and_what(result):
    ev = [
        (e.id, e.version, e.section, e.line_index, e.unit_lines, e.section_lines, e.at_end, e.kind)
        for e in result.events
        if e.file == "proj:CLAUDE.md"
    ]
    assert ev == [
        ("proj:CLAUDE.md@1#0", 1, "style", 3, 1, 5, True, "bullet"),
        ("proj:CLAUDE.md@2#0", 2, "testing", 2, 1, 3, True, "bullet"),
        ("proj:CLAUDE.md@6#0", 6, "style", 5, 1, 7, True, "bullet"),
        ("proj:CLAUDE.md@6#1", 6, "tests", 2, 1, 3, True, "bullet"),
        ("proj:CLAUDE.md@9#0", 9, "style", 6, 1, 8, True, "bullet"),
    ]
    by = _events(result)
    assert by["Never commit secrets to the repository."].hash == mine.rule_hash(E1)
    # the move in v4 made no new event, nor did the reword in v3
    assert not any(e.version in (3, 4) for e in result.events if e.file == "proj:CLAUDE.md")
    gem = [e for e in result.events if e.file == "proj:GEMINI.md"]
    assert [(e.version, e.section, e.fate) for e in gem] == [(1, "g", "kept")]


def test_fates(result):
    by = _events(result)
    fate = {
        t: (e.fate, e.fate_version, e.fate_section, e.fate_similarity, e.fate_decision, e.versions_survived)
        for t, e in by.items()
        if e.file == "proj:CLAUDE.md"
    }
    assert fate == {
        "Never commit secrets to the repository.": ("reworded", 3, "style", 0.8864, "stale", 1),
        "Always run the targeted tests only.": ("moved", 4, "style", 1.0, "orphaned", 1),
        "Prefer frozen dataclasses.": ("kept", None, "style", None, None, 3),
        "Use tmp_path for fixtures.": ("deleted", 7, None, None, "stale", 0),
        "Document every public function.": ("kept", None, "style", None, None, 0),
    }
    assert by["Never commit secrets to the repository."].fate_commit == _file(result, "AGENTS.md").versions[3].commit


def test_what_the_section_did_before_the_fate(result):
    by = _events(result)
    sec = {
        t: (
            e.section_changed_before_fate,
            e.section_edited_before_fate,
            e.section_changed_at_fate,
            e.section_edited_at_fate,
            e.first_section_change,
            e.section_changes,
            e.section_edits,
        )
        for t, e in by.items()
        if e.file == "proj:CLAUDE.md"
    }
    assert sec == {
        # reworded with nothing else in its section touched: the rewording is not a section change
        "Never commit secrets to the repository.": (False, False, False, False, None, 0, 0),
        # moved out of its section: the section kept its other line
        "Always run the targeted tests only.": (False, False, False, False, None, 0, 0),
        # kept to the end while its section was edited (v8) and grew (v9)
        "Prefer frozen dataclasses.": (True, True, False, False, 8, 2, 1),
        # deleted while another section changed: its own section did not
        "Use tmp_path for fixtures.": (False, False, False, False, None, 0, 0),
        "Document every public function.": (False, False, False, False, None, 0, 0),
    }


def test_a_heading_rename_is_followed_by_the_fate(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    body = "# T\n\n## Rules\n\n- First rule here.\n- Second rule here.\n"
    _commit(repo, {"AGENTS.md": body}, "a", 1)
    _commit(repo, {"AGENTS.md": body + "- Added later on.\n"}, "b", 2)
    _commit(repo, {"AGENTS.md": body.replace("## Rules", "## Guidelines") + "- Added later on.\n"}, "c", 3)
    _commit(repo, {"AGENTS.md": body.replace("## Rules", "## Guidelines") + "- Added later on!\n- More.\n"}, "d", 4)
    r = mine.mine_repository(repo)
    (e,) = [e for e in r.events if e.version == 1]
    assert (
        e.section,
        e.fate,
        e.fate_version,
        e.fate_section,
        e.section_changed_before_fate,
        e.section_changed_at_fate,
        e.section_edited_at_fate,
    ) == ("rules", "reworded", 3, "guidelines", True, True, False)
    assert [p.edit_class for p in r.pairs] == ["append-only", "heading-rename", "in-section-edit"]


def test_an_insert_mid_section_and_a_file_deleted_then_re_added(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    _commit(repo, {"GEMINI.md": "# A\n\n- one\n- three\n"}, "a", 1)
    _commit(repo, {"GEMINI.md": None}, "b", 2)
    _commit(repo, {"GEMINI.md": "# A\n\n- one\n- two\n- three\n"}, "c", 3)
    r = mine.mine_repository(repo)
    (f,) = r.files
    assert (f.id, len(f.versions), f.deleted) == ("r:GEMINI.md", 2, False)
    assert [(p.edit_class, p.changes) for p in r.pairs] == [("append-only", ("insert",))]
    assert [(e.line_index, e.at_end, e.fate) for e in r.events] == [(2, False, "kept")]


def test_renumbered_steps(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    steps = [
        "## Step 1: Setup\n\nInstall it.\n",
        "## Step 2: Build\n\nRun make.\n",
        "## Step 3: Verify\n\nRun the checks.\n",
    ]
    _commit(repo, {"SKILL.md": "---\nname: s\ndescription: d\n---\n" + "\n".join(steps)}, "a", 1)
    _commit(
        repo,
        {
            "SKILL.md": "---\nname: s\ndescription: d\n---\n"
            + "\n".join([steps[0], steps[2].replace("Step 3", "Step 2")])
        },
        "b",
        2,
    )
    _commit(
        repo,
        {
            "SKILL.md": "---\nname: s\ndescription: d\n---\n"
            + "\n".join([steps[0], steps[2].replace("Step 3", "Step 9")])
        },
        "c",
        3,
    )
    r = mine.mine_repository(repo)
    assert [(s.section, s.state, s.change, s.target) for s in r.pairs[0].sections] == [
        ("step-1-setup", "clean", "unchanged", "step-1-setup"),
        ("step-2-build", "orphaned", "remove", None),
        ("step-3-verify", "stale", "renumber", "step-2-verify"),
    ]
    assert [(p.edit_class, p.changes) for p in r.pairs] == [
        ("section-removed", ("remove", "renumber")),
        ("heading-rename", ("renumber",)),
    ]


def test_a_rule_in_a_deleted_section_and_a_deleted_file(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    _commit(repo, {"CLAUDE.md": "# A\n\n- one\n\n# B\n\n- two\n"}, "a", 1)
    _commit(repo, {"CLAUDE.md": "# A\n\n- one\n\n# B\n\n- two\n- three\n"}, "b", 2)
    _commit(repo, {"CLAUDE.md": "# A\n\n- one\n"}, "c", 3)
    _commit(repo, {"CLAUDE.md": None}, "d", 4)
    r = mine.mine_repository(repo)
    (e,) = r.events
    assert (
        e.fate,
        e.fate_version,
        e.fate_decision,
        e.section_changed_at_fate,
        e.section_edited_at_fate,
        e.file_deleted,
    ) == ("deleted", 2, "orphaned", True, True, True)
    assert r.files[0].deleted and r.pairs[-1].edit_class == "section-removed"


def test_first_parent_a_merge_is_one_update(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _commit(repo, {"CLAUDE.md": "# A\n\n- one\n"}, "a", 1)
    _git(repo, "checkout", "-q", "-b", "side")
    _commit(repo, {"CLAUDE.md": "# A\n\n- one\n- two\n"}, "b", 2)
    _commit(repo, {"CLAUDE.md": "# A\n\n- one\n- two\n- three\n"}, "c", 3)
    _git(repo, "checkout", "-q", "main")
    _commit(repo, {"other.txt": "x\n"}, "d", 4)
    _git(repo, "merge", "-q", "--no-ff", "side", "-m", "merge", when=5)
    r = mine.mine_repository(repo)
    assert len(r.files[0].versions) == 2 and r.repos[0]["commits"] == 3  # the side branch's commits are not walked
    assert [(e.version, e.line_index, e.fate) for e in r.events] == [(1, 2, "kept"), (1, 3, "kept")]


def test_missing_blobs_mine_without_renames(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    _commit(repo, {"CLAUDE.md": "# A\n\n- one\n- two\n- three\n"}, "a", 1)
    _commit(repo, {"CLAUDE.md": "# A\n\n- one\n- two\n- three\n- four\n"}, "b", 2)
    _git(repo, "mv", "CLAUDE.md", "AGENTS.md")
    _commit(repo, {"AGENTS.md": "# A\n\n- one\n- two\n- three\n- four\n- five\n"}, "c", 3)
    sha = _git(repo, "rev-parse", "HEAD~1:CLAUDE.md").strip()
    (repo / ".git" / "objects" / sha[:2] / sha[2:]).unlink()  # as in a partial clone
    r = mine.mine_repository(repo)
    assert [(f.path, len(f.versions), f.deleted) for f in r.files] == [("CLAUDE.md", 1, True), ("AGENTS.md", 1, False)]
    assert r.notes == {"r: missing": 1, "r: renames not followed (blobs missing)": 1}


def test_a_rule_moved_to_another_file(tmp_path):
    """CLAUDE.md emptied into a new AGENTS.md (the rules then live there): moved, not deleted; a rule moved from
    one file into another existing one in the same commit is no new rule there."""
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    rules = "# Rules\n\n- Run the whole test suite.\n"
    _commit(repo, {"CLAUDE.md": rules, "GEMINI.md": "# G\n\n- Be brief.\n"}, "a", 1)
    _commit(repo, {"CLAUDE.md": rules + "- Never update every dependency at once.\n"}, "b", 2)
    _commit(repo, {"CLAUDE.md": rules + "- Never update every dependency at once.\n- Use ruff for lint.\n"}, "c", 3)
    _commit(
        repo,
        {
            "CLAUDE.md": rules + "- Use ruff for lint.\n",
            "GEMINI.md": "# G\n\n- Be brief.\n- Never update every dependency at once!\n",
        },
        "d",
        4,
    )
    _commit(repo, {"CLAUDE.md": "@AGENTS.md\n", "AGENTS.md": rules + "- Use ruff for lint.\n"}, "e", 5)
    r = mine.mine_repository(repo)
    fates = {e.text: (e.file, e.fate, e.fate_version, e.fate_file, e.fate_section, e.fate_similarity) for e in r.events}
    assert fates == {
        "Never update every dependency at once.": ("r:CLAUDE.md", "moved", 3, "r:GEMINI.md", "g", 0.9737),
        "Use ruff for lint.": ("r:CLAUDE.md", "moved", 4, "r:AGENTS.md", "rules", 1.0),
    }
    assert [p.edit_class for p in r.pairs if p.file == "r:CLAUDE.md"][-1] == "rewrite"  # → "@AGENTS.md"


def test_a_headingless_file_rewritten(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    _commit(repo, {".cursorrules": "Use tabs.\nPrefer small functions over large ones.\n"}, "a", 1)
    _commit(repo, {".cursorrules": "Use tabs.\nPrefer small functions over large ones.\nAdd tests.\n"}, "b", 2)
    _commit(repo, {".cursorrules": "You are an expert in Go and gRPC services.\n"}, "c", 3)
    r = mine.mine_repository(repo)
    assert [(p.edit_class, [(s.section, s.state, s.change) for s in p.sections]) for p in r.pairs] == [
        ("append-only", [("_body", "stale", "append")]),
        ("rewrite", [("_body", "orphaned", "rewrite")]),
    ]
    assert [(e.kind, e.fate, e.section_changed_at_fate, e.section_edited_at_fate) for e in r.events] == [
        ("paragraph", "deleted", True, True)
    ]


def test_a_blob_missing_outside_the_instruction_files_does_not_stop_renames(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    big = "".join(f"line {k}\n" for k in range(200))
    _commit(repo, {"CLAUDE.md": "# A\n\n- one\n- two\n- three\n", "data.txt": big}, "a", 1)
    _git(repo, "mv", "CLAUDE.md", "AGENTS.md")
    _git(repo, "mv", "data.txt", "data2.txt")
    _commit(repo, {"AGENTS.md": "# A\n\n- one\n- two\n- three\n- four\n"}, "b", 2)
    sha = _git(repo, "rev-parse", "HEAD~1:data.txt").strip()
    (repo / ".git" / "objects" / sha[:2] / sha[2:]).unlink()  # a partial clone leaves big blobs out
    r = mine.mine_repository(repo)
    assert [(f.paths, len(f.versions)) for f in r.files] == [(("CLAUDE.md", "AGENTS.md"), 2)] and not r.notes


def test_pathspecs_cover_the_patterns():
    assert mine.pathspecs(mine.DEFAULT_PATTERNS)[:5] == [
        "*SKILL.md",
        "*CLAUDE.md",
        "*AGENTS.md",
        "*GEMINI.md",
        "*.cursor/rules/*",
    ]
    assert mine.pathspecs([".github/copilot-instructions.md"]) == ["*.github/copilot-instructions.md"]


def _oracle(repo: Path, path: str) -> list[str]:
    """The commits that made a new version of the file now at `path`, the slow, obvious way: `git log --follow`
    of that one path, the file's text at each commit read by `git show`, consecutive repeats dropped."""
    log = _git(repo, "log", "--first-parent", "--follow", "--format=%x01%H", "--name-only", "HEAD", "--", path)
    out, last = [], None
    for chunk in reversed(log.split("\x01")[1:]):  # (--follow does not follow under --reverse)
        commit, *names = [n for n in chunk.split("\n") if n.strip()]
        text = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{names[-1]}"], capture_output=True).stdout
        if text != last:
            out.append(commit)
        last = text
    return out


def test_the_one_pass_walk_agrees_with_git_log_follow_per_file(history, tmp_path):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import bench_mine

    synthetic = tmp_path / "synthetic"
    bench_mine.build(synthetic, 240, 6, seed=3)
    for repo in (history, synthetic):
        r = mine.read_versions(repo, patterns=["SKILL.md", "CLAUDE.md", "AGENTS.md"])
        assert r.files
        for f in r.files:
            if not f.deleted:
                assert [v.commit for v in f.versions] == _oracle(repo, f.path), f.id


# ------------------------------------------------------------------------------------------ records and bare


def test_records_are_text_free_and_json(result):
    records = result.to_records()
    text = json.dumps(records)
    json.loads(text)
    assert set(records) == {"repos", "files", "versions", "pairs", "events", "notes"}
    for phrase in ("Never commit", "frozen dataclasses", "Intro text", "Run it with", "Type everything"):
        assert phrase not in text
    assert len(records["versions"]) == 20 and len(records["pairs"]) == 16 and len(records["events"]) == 6
    e = records["events"][0]
    assert set(e) == {
        "id",
        "file",
        "version",
        "commit",
        "section",
        "line_index",
        "unit_lines",
        "section_lines",
        "at_end",
        "kind",
        "hash",
        "fate",
        "fate_version",
        "fate_commit",
        "fate_similarity",
        "fate_section",
        "fate_file",
        "fate_decision",
        "versions_survived",
        "section_changed_before_fate",
        "section_edited_before_fate",
        "section_changed_at_fate",
        "section_edited_at_fate",
        "first_section_change",
        "section_changes",
        "section_edits",
        "section_touched_before_fate",
        "section_touched_at_fate",
        "file_deleted",
    }
    v = records["versions"][-1]  # the last of .cursor/rules/py.mdc
    assert set(v) == {
        "file",
        "version",
        "commit",
        "date",
        "path",
        "blob",
        "lines",
        "body_lines",
        "bytes",
        "sections",
        "frontmatter_digest",
        "body_digest",
        "rule_units",
        "duplicate_units",
        "near_duplicate_units",
    }
    assert (v["rule_units"], v["duplicate_units"], v["near_duplicate_units"], v["sections"]) == (1, 0, 0, 1)
    assert mine._duplicates(["Use ruff.", "use ruff.", "Use ruff now.", "Something else"]) == {
        "rule_units": 4,
        "duplicate_units": 1,
        "near_duplicate_units": 2,
    }
    p = records["pairs"][0]
    assert p["edit_class"] == "append-only" and p["clean"] == 2 and p["stale"] == 1 and p["orphaned"] == 0
    assert p["decisions"][1] == {
        "section": "style",
        "state": "stale",
        "change": "append",
        "target": "style",
        "moved": False,
        "lines_added": 1,
        "lines_removed": 0,
    }


def test_a_bare_clone_mines_the_same(history, result, tmp_path):
    bare = tmp_path / "owner+name" / "repo"
    subprocess.run(["git", "clone", "-q", "--bare", str(history), str(bare)], check=True)
    got = mine.mine([bare]).to_records()
    want = result.to_records()
    assert got["repos"][0]["repo"] == "owner/name"

    def strip(records):
        s = json.dumps({k: v for k, v in records.items() if k != "repos"})
        return s.replace('"owner/name', '"proj').replace("owner/name:", "proj:")

    assert strip(got) == strip(want)


def test_two_repositories_of_one_name_keep_their_file_ids_apart(history, tmp_path):
    other = tmp_path / "x" / "proj"
    subprocess.run(["git", "clone", "-q", str(history), str(other)], check=True)
    r = mine.mine([history, other], patterns=["GEMINI.md"])
    assert [f.id for f in r.files] == ["proj:GEMINI.md", "proj#2:GEMINI.md"]
    assert [x["repo"] for x in r.repos] == ["proj", "proj#2"]


def test_progress_is_drawn_on_the_stream_given(history, monkeypatch):
    import io

    monkeypatch.setattr(mine, "PROGRESS_MIN", 1)
    stream = io.StringIO()
    r = mine.mine([history], progress=stream)
    assert "mine proj" in stream.getvalue() and len(r.pairs) == 16


def test_texts_mine_as_their_repository_does(result):
    """Synthetic histories go through the same analysis: the fixture's CLAUDE.md texts give the same classes,
    decisions and fates as the repository."""
    texts = mine.mine_texts([("CLAUDE.md", "CLAUDE.md", [t for _, t in CLAUDE] + [AGENTS])], repo="proj")
    strip = lambda r: [(p.edit_class, p.changes, p.sections, p.events) for p in r.pairs if p.file == "proj:CLAUDE.md"]
    assert strip(texts) == strip(result)
    fates = lambda r: [
        (e.version, e.section, e.hash, e.fate, e.fate_version, e.section_changes)
        for e in r.events
        if e.file == "proj:CLAUDE.md"
    ]
    assert fates(texts) == fates(result)
    assert texts.to_records()["versions"][0]["commit"] == "v0"


def test_custom_globs(history):
    r = mine.mine([history], patterns=["GEMINI.md"])
    assert [f.path for f in r.files] == ["GEMINI.md"]
    assert mine.matches("a/.cursor/rules/x.mdc", mine.DEFAULT_PATTERNS) == ".cursor/rules/*.mdc"
    assert mine.matches(".github/copilot-instructions.md", mine.DEFAULT_PATTERNS) == ".github/copilot-instructions.md"
    assert mine.matches("docs/SKILL.md.bak", mine.DEFAULT_PATTERNS) is None


def test_a_blob_over_the_cap_is_skipped_and_counted(history):
    r = mine.mine([history], patterns=["GEMINI.md"], max_blob_bytes=12)
    assert r.files[0].versions[0].text == "# G\n\n- one\n" and len(r.files[0].versions) == 1
    assert r.notes == {"proj: too-big": 2}  # the size is checked before the bytes are read


def test_units_and_normalization():
    body = "\nIntro line\ncontinued.\n\n- a bullet\n  more of it\n- [x] done\n| a | b |\n> quoted\n```\n- code\n```\n"
    assert mine.rule_units(body) == [
        (1, 2, "paragraph", "Intro line continued."),
        (4, 2, "bullet", "a bullet more of it"),
        (6, 1, "bullet", "done"),
        (7, 1, "table-row", "| a | b |"),
        (8, 1, "quote", "quoted"),
    ]
    assert mine.normalize_rule("  1.  Use   X ") == "Use X" == mine.normalize_rule("- Use X")
    assert [u[3] for u in mine.rule_units("One rule.\nAnother rule.\nA wrapped\nsentence.\n")] == [
        "One rule.",
        "Another rule.",
        "A wrapped sentence.",
    ]


def test_edit_class_table():
    assert mine.edit_class(set(), body_changed=False) == "frontmatter-only"
    assert mine.edit_class({"unchanged"}) == "whitespace-only"
    assert mine.edit_class({"insert"}) == "append-only"
    assert mine.edit_class({"append", "add"}) == "section-added"
    assert mine.edit_class({"renumber", "edit"}) == "heading-rename"
    assert mine.edit_class({"renumber", "add"}) == "section-added"
    assert mine.edit_class({"rename", "add"}) == "mixed"
    assert mine.edit_class({"remove", "add"}, removed_share=0.6) == "rewrite"
    assert mine.edit_class({"remove", "add"}, removed_share=0.5) == "mixed"
    assert set(mine.EDIT_CLASSES) >= {mine.edit_class(k) for k in ({"move"}, {"remove"}, {"edit"})}


def test_an_empty_repository_mines_nothing(tmp_path):
    _git(tmp_path, "init", "-q")
    r = mine.mine([tmp_path])
    assert r.files == () and r.repos[0]["head"] is None


# ------------------------------------------------------------------------------------------ errors


def test_errors_name_the_path(tmp_path, monkeypatch):
    with pytest.raises(MineError, match="no such path") as exc:
        mine.mine([tmp_path / "nope"])
    assert exc.value.path == str(tmp_path / "nope")
    (tmp_path / "plain").mkdir()
    with pytest.raises(MineError, match="not a git repository"):
        mine.mine([tmp_path / "plain"])
    (tmp_path / "file").write_text("x")
    with pytest.raises(MineError, match="not a git repository"):
        mine.mine([tmp_path / "file"])
    monkeypatch.setenv("PATH", str(tmp_path / "plain"))
    with pytest.raises(MineError, match="git is not installed"):
        mine.mine([tmp_path])


# ------------------------------------------------------------------------------------------ CLI


def test_cli_json(history, capsys, tmp_path):
    out = tmp_path / "mined.json"
    assert cli.main(["mine", str(history), "--json", "--out", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text())
    assert [len(printed[k]) for k in ("repos", "files", "versions", "pairs", "events")] == [1, 4, 20, 16, 6]
    assert not list(tmp_path.glob("*.part"))


def test_cli_text_and_files(history, capsys):
    assert cli.main(["mine", str(history), "--files", "GEMINI.md, .cursor/rules/*.mdc"]) == 0
    out = capsys.readouterr().out
    assert "proj: 17 commit(s), 2 instruction file(s), 3 version(s)" in out
    assert "1 rule event(s): 1 kept" in out and "note: proj: not-utf-8: 1" in out


def test_cli_rev_pins_the_history(history, capsys):
    first = _git(history, "rev-list", "--max-parents=0", "HEAD").strip()
    assert cli.main(["mine", str(history), "--rev", "HEAD~8", "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert records["repos"][0]["rev"] == "HEAD~8" and records["repos"][0]["commits"] == 9
    assert [(f["path"], f["versions"]) for f in records["files"]] == [("CLAUDE.md", 9), ("skills/demo/SKILL.md", 7)]
    assert cli.main(["mine", str(history), "--rev", f"{first}..HEAD~8", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["repos"][0]["commits"] == 8
    assert cli.main(["mine", str(history), "--rev", "no-such-rev"]) == 1
    assert "git log failed" in capsys.readouterr().err


def test_cli_errors(tmp_path, capsys):
    assert cli.main(["mine", str(tmp_path / "nope")]) == 1
    assert capsys.readouterr().err.strip() == f"overlay-kit mine: error: {tmp_path / 'nope'}: no such path"
    assert cli.main(["mine", str(tmp_path), "--json"]) == 1
    err = json.loads(capsys.readouterr().err)
    assert err == {"error": {"type": "MineError", "message": "not a git repository", "where": str(tmp_path)}}
    out = tmp_path / "o.json"
    assert cli.main(["mine", str(tmp_path / "nope"), "--out", str(out)]) == 1
    assert not out.exists()
