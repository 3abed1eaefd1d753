"""The CLI as a newcomer meets it: skills found by name through `$OVERLAY_KIT_SKILLS`, `rebase --apply`
(the store mode, behind a confirmation), `anchors --db`, and `resolve`'s notes never glued to the body."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from overlay_kit import gates
from overlay_kit.cli import main
from overlay_kit.skill import default_roots, find_skill, load_skill
from overlay_kit.store import Store

REPO = Path(__file__).resolve().parents[1]
OLD = str(REPO / "datasets" / "skills" / "triage-inbox")
NEW = str(REPO / "datasets" / "updates" / "triage-inbox")


@pytest.fixture
def db(tmp_path):
    """One staged, then approved, preference on `drafting-replies` (a section the update renames away)."""
    path = tmp_path / "overlay.db"
    with Store.open(path) as store:
        r = gates.learn(
            store,
            load_skill(OLD),
            "preference",
            {"body": "Keep replies to two sentences."},
            section="drafting-replies",
            provenance="user_instruction",
        )
        store.approve(r.delta.id)
    return path, r.delta.id


def test_overlay_kit_skills_adds_discovery_roots_after_project(monkeypatch, tmp_path):
    monkeypatch.setenv("OVERLAY_KIT_SKILLS", f"{tmp_path / 'none'}:{REPO / 'datasets' / 'skills'}")
    roots = default_roots(tmp_path, home=tmp_path)
    assert [r.label for r in roots][:3] == ["project", "env", "env"]
    skill = find_skill("triage-inbox", roots)
    assert skill.path == REPO / "datasets" / "skills" / "triage-inbox" / "SKILL.md" and skill.root == "env"


def test_without_overlay_kit_skills_a_bundled_example_is_found_last(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("OVERLAY_KIT_SKILLS", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    skill = find_skill("triage-inbox")
    assert skill.root == "bundled" and skill.path == REPO / "datasets" / "skills" / "triage-inbox" / "SKILL.md"
    own = tmp_path / ".gaia" / "skills" / "triage-inbox"  # the user's own skill of that name wins
    own.mkdir(parents=True)
    (own / "SKILL.md").write_text(skill.path.read_text(encoding="utf-8"), encoding="utf-8")
    assert find_skill("triage-inbox").root == "project"
    assert main(["anchors", "no-such-skill"]) == 1
    assert "no discovered skill named 'no-such-skill'" in capsys.readouterr().err


def test_rebase_without_apply_says_it_wrote_nothing(db, capsys):
    path, delta_id = db
    assert main(["rebase", OLD, NEW, "--db", str(path)]) == 0
    assert "a plan: nothing written; --apply moves the stored deltas" in capsys.readouterr().out
    with Store.open(path) as store:
        assert store.get(delta_id).status == "active"


def test_rebase_apply_asks_and_a_no_writes_nothing(db, capsys, monkeypatch):
    path, delta_id = db
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    assert main(["rebase", OLD, NEW, "--apply", "--db", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"apply this plan to {path}? [y/N]" in err and "not applied (nothing written)" in err
    with Store.open(path) as store:
        assert store.get(delta_id).status == "active" and store.base_history("triage-inbox") == []


def test_rebase_apply_confirmed_moves_the_stored_deltas(db, capsys, monkeypatch):
    path, delta_id = db
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    assert main(["rebase", OLD, NEW, "--policy", "fuzzy", "--apply", "--db", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"applied: {delta_id} orphaned (drafting-replies)" in out
    assert "rebase: applied to" in out and "1 orphaned" in out
    with Store.open(path) as store:
        assert store.get(delta_id).status == "orphaned"
        assert [h["version"] for h in store.base_history("triage-inbox")] == ["1.2.0", "1.3.0"]
    assert main(["deltas", "triage-inbox", "--orphaned", "--db", str(path)]) == 0
    assert delta_id in capsys.readouterr().out


def test_rebase_apply_json_with_yes_and_a_second_apply_from_a_stale_base_is_refused(db, capsys):
    path, delta_id = db
    assert main(["rebase", OLD, NEW, "--apply", "--yes", "--json", "--db", str(path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["applied"]["deltas"] == [{"id": delta_id, "state": "orphaned", "section": "drafting-replies"}]
    assert main(["rebase", OLD, NEW, "--apply", "--yes", "--db", str(path)]) == 1
    assert "the store's current base of triage-inbox is version 1.3.0" in capsys.readouterr().err


def test_anchors_db_counts_live_deltas_per_section_and_never_creates(db, capsys, tmp_path):
    path, _ = db
    assert main(["anchors", OLD, "--db", str(path), "--json"]) == 0
    rows = {r["slug"]: r["deltas"] for r in json.loads(capsys.readouterr().out)["sections"]}
    assert rows["drafting-replies"] == 1 and sum(rows.values()) == 1
    missing = tmp_path / "typo.db"
    assert main(["anchors", OLD, "--db", str(missing)]) == 1
    assert f"no database at {missing}" in capsys.readouterr().err and not missing.exists()


def test_every_verb_that_touches_the_overlay_takes_db():
    from overlay_kit.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    with_db = {name for name, p in sub.choices.items() if any("--db" in a.option_strings for a in p._actions)}
    assert (
        set(sub.choices) - with_db == {"validate", "calibrate-tau", "live", "mine", "model"}
    )  # they read only the files named (live: in-memory stores of its own; mine: git repositories; model: the model cache)


def test_resolve_ends_the_body_with_a_newline_before_its_notes(tmp_path, capsys):
    skill = tmp_path / "no-newline"
    skill.mkdir()
    (skill / "SKILL.md").write_text(
        "---\nname: no-newline\ndescription: A body without a final newline.\n---\n# Title\n\nLast line",
        encoding="utf-8",
    )
    assert main(["resolve", str(skill), "--db", str(tmp_path / "none.db")]) == 0
    out, err = capsys.readouterr()
    assert out.endswith("Last line\n") and err.startswith("# no-newline:")
