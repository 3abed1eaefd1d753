"""`overlay-kit resolve` and `overlay-kit deltas --diff`."""

from __future__ import annotations

import json

import pytest
from resolve_fixtures import SKILLS, learn_active, no_network, triage_inbox  # noqa: F401

from overlay_kit import anchor
from overlay_kit.cli import main
from overlay_kit.resolve import STALE_MARK
from overlay_kit.store import Store

pytestmark = pytest.mark.usefixtures("no_network")
SKILL = str(SKILLS / "triage-inbox")


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "overlay.db"
    skill = triage_inbox()
    with Store.open(path) as store:
        learn_active(
            store, skill, "preference", {"body": "Escalate anything from the CFO within the hour."}, "escalation"
        )
        learn_active(store, skill, "tool-hint", {"prefer": ["summarize_thread"]}, "reading-the-inbox")
        stale = learn_active(store, skill, "preference", {"body": "Archive newsletters unread."}, "cleaning-up")
        store.conn.execute(
            "UPDATE skill_deltas SET anchor = json_set(anchor, '$.digest', '0000000000000000') WHERE id = ?",
            (stale.id,),
        )
        with store.transaction():  # an anchor the store wrote in an older base (sealed), not a hand edit
            store._reseal([stale.id])
    return path


def test_resolve_shows_anchored_lines_under_sections_and_the_learned_block(db, capsys):
    assert main(["resolve", SKILL, "--db", str(db)]) == 0
    out, err = capsys.readouterr()
    sections = {s.slug: s.text for s in anchor.parse(out)}
    assert "- Escalate anything from the CFO within the hour." in sections["escalation"]
    assert out.rstrip().endswith(f"- (Cleaning up) {STALE_MARK}Archive newsletters unread.")  # shipped: marked
    assert "learned-adjustments" in sections
    assert "stale" in err and "skill_tools: summarize_thread," in err


def test_resolve_json_shape(db, capsys):
    assert main(["resolve", SKILL, "--db", str(db), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {
        "db",
        "skill",
        "learned",
        "text",
        "changed",
        "skill_tools",
        "withheld_tools",
        "applied",
        "notes",
        "tokens",
        "ceiling",
        "fragment",
    }
    assert data["skill"] == "triage-inbox" and data["learned"] and data["changed"]
    assert data["skill_tools"][0] == "summarize_thread"
    assert data["fragment"].startswith("## Learned adjustments") and "(Escalation) Escalate" in data["fragment"]
    assert {n["kind"] for n in data["notes"]} >= {"applied", "stale"}
    assert all(set(a) == {"id", "kind", "tier", "section"} for a in data["applied"])


def test_no_learned_skills_prints_the_authored_body(db, capsys):
    assert main(["resolve", SKILL, "--db", str(db), "--no-learned-skills", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["text"] == triage_inbox().body and not data["learned"]
    assert list(data["skill_tools"]) == list(triage_inbox().tools)


def test_resolve_never_creates_a_database(tmp_path, capsys):
    missing = tmp_path / "nope.db"
    assert main(["resolve", SKILL, "--db", str(missing), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert not missing.exists() and data["db"] is None and data["notes"][0]["kind"] == "no_store"


def test_deltas_diff_is_a_unified_diff_of_effective_vs_authored(db, capsys):
    assert main(["deltas", SKILL, "--db", str(db), "--diff"]) == 0
    out = capsys.readouterr().out
    diff = out[out.index("--- a/triage-inbox/SKILL.md (authored)") :]
    assert "+++ b/triage-inbox/SKILL.md (effective)" in diff
    assert "+- Escalate anything from the CFO within the hour." in diff
    assert not [ln for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    assert main(["deltas", SKILL, "--db", str(db), "--diff", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["diff"] == diff


def test_deltas_diff_needs_a_skill(db, capsys):
    assert main(["deltas", "--db", str(db), "--diff"]) == 1
    assert "--diff needs SKILL" in capsys.readouterr().err
