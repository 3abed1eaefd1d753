"""Lessons are keyed by skill name and discovery-root directory (notebook 13's verdict): a lesson learned on
project A's skill never applies to project B's same-named skill; records of the label alone, written before,
keep matching their label as they always did."""

from __future__ import annotations

from pathlib import Path

from overlay_kit import gates, rebase
from overlay_kit.resolve import resolve
from overlay_kit.skill import Root, discover
from overlay_kit.store import Store

TEXT = "---\nname: probe-skill\ndescription: a probe\n---\n# Probe\n\n## Steps\n\n{body}\n"


def _skill(root: Path, body: str, label: str = "project"):
    (root / "probe-skill").mkdir(parents=True)
    (root / "probe-skill" / "SKILL.md").write_text(TEXT.format(body=body), encoding="utf-8")
    return discover([Root(label, root)]).skills["probe-skill"]


def _learn(store, skill, body="Learned here."):
    r = gates.learn(store, skill, "preference", {"body": body}, section="steps", provenance="user_instruction")
    store.approve(r.delta.id)
    return r.delta


def test_a_lesson_stays_with_its_projects_skill(tmp_path):
    a = _skill(tmp_path / "a" / "skills", "Do it our way.")
    b = _skill(tmp_path / "b" / "skills", "Do it another author's way.")
    assert a.root_key == f"project:{(tmp_path / 'a' / 'skills').resolve()}" and a.root == "project"
    with Store.open(tmp_path / "o.db") as store:
        d = _learn(store, a)
        assert d.base_root == a.root_key
        assert [x.id for x in resolve(a, store, embedder=False).applied] == [d.id]
        eff = resolve(b, store, embedder=False)
        assert eff.applied == () and [n.delta_id for n in eff.notes_of("orphaned")] == [d.id]


def test_a_label_only_record_matches_its_label_as_before(tmp_path):
    a = _skill(tmp_path / "a" / "skills", "Do it our way.")
    with Store.open(tmp_path / "o.db") as store:
        d = _learn(store, a)
        store.conn.execute("UPDATE skill_bases SET root = 'project'")  # as an older version recorded them
        legacy = d.evolve(id="legacy", base_root="project")
        assert a.from_root(legacy.base_root) and a.from_root(None)
        assert not a.from_root("user") and not a.from_root("project:/elsewhere")
        change = store.register_base(a)
        assert not change.changed and store.base_history("probe-skill")[-1]["root"] == a.root_key


def test_a_base_now_served_from_another_directory_orphans_its_lessons_on_rebase(tmp_path):
    a = _skill(tmp_path / "a" / "skills", "Do it our way.")
    b = _skill(tmp_path / "b" / "skills", "Do it another author's way.")
    with Store.open(tmp_path / "o.db") as store:
        rebase.apply(store, a, "section")  # first sighting
        d = _learn(store, a)
        result = rebase.apply(store, b, "section", old=a)
        assert result.change.changed and result.change.old_root == a.root_key != result.change.root
        assert [(o.delta.id, o.state) for o in result.outcomes] == [(d.id, "orphaned")]
