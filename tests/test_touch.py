"""The stale flag narrowed to what a lesson refers to: `touch.touches`, its use by `rebase` (an untouched stale
lesson re-keyed clean, audited; the old behaviour behind `stale_touch=False`) and by the miner (the flag per rule
event that notebook 16 and benchmarks/touch_accuracy.py measure)."""

import inspect
import json

import pytest
from overlay_support import TRUSTED, make_skill

from overlay_kit import anchor, gates, mine, rebase, touch
from overlay_kit.cli import main
from overlay_kit.defaults import SHIPPED
from overlay_kit.grammar import Delta, Provenance
from overlay_kit.skill import load_skill
from overlay_kit.store import Store

OLD = """# Build

Compile the project.

## Tests

- Run the suite with `pytest -x` before every commit.
- Keep fixtures small and local to the test module.
- Use the shared temp directory for scratch files.

## Release

Tag the release and publish the wheel.
"""


def test_a_lesson_naming_a_tool_whose_line_was_edited_is_touched():
    new = OLD.replace("`pytest -x`", "`nox -s tests`")
    t = touch.touches("When pytest hangs, pass --timeout=60.", OLD, new)
    assert t and t.touched and "pytest" in t.terms and "pytest" in t.reason


def test_a_typo_fix_in_an_unrelated_sentence_does_not_touch():
    new = OLD.replace("scratch files", "scrach files")
    t = touch.touches("When pytest hangs, pass --timeout=60.", OLD, new)
    assert not t and t.reason == "section changed, but not what this lesson refers to" and t.terms == ()


def test_an_unrelated_added_line_does_not_touch_but_one_about_the_lesson_does():
    appended = OLD.replace("scratch files.\n", "scratch files.\n- Name tests after the behaviour.\n")
    assert not touch.touches("When pytest hangs, pass --timeout=60.", OLD, appended)
    about = OLD.replace("scratch files.\n", "scratch files.\n- If pytest hangs, pass a timeout.\n")
    t = touch.touches("When pytest hangs, pass --timeout=60.", OLD, about)
    assert t and t.reason.startswith("added lines mention") and set(t.terms) >= {"pytest", "hang", "timeout"}


def test_a_rewritten_section_touches_every_lesson_and_an_unchanged_one_none():
    rewritten = "# Build\n\nEverything is done by the CI pipeline now; nothing to do locally.\n"
    t = touch.touches("Be brief.", OLD, rewritten)
    assert t and t.reason.startswith("section rewritten")
    assert not touch.touches("Be brief.", OLD, OLD)


def test_terms_fold_case_plurals_and_stop_words_and_split_identifiers():
    assert touch.terms("Run the Tests with `pytest -x` on src/app.py") == {"run", "test", "pytest", "src", "app"}
    assert touch.terms("Wait 30 s, not 5") == {"wait", "30"}


def test_the_product_ships_the_setting_and_every_entry_point_reads_it():
    assert SHIPPED.stale_touch is False  # not adopted: see overlay_kit/defaults.py
    for fn in (rebase.apply, rebase.rebase_deltas):
        assert inspect.signature(fn).parameters["stale_touch"].default == SHIPPED.stale_touch


# ------------------------------------------------------------------------------------------ rebase


def _delta(skill, section, body):
    return Delta(
        skill.name,
        "preference",
        {"body": body},
        anchor.anchor_for(skill.body, section, skill.version),
        Provenance(TRUSTED),
    )


TOUCHED = "When pytest hangs, pass --timeout=60."
RELEASE = "Tag releases with a leading v."


def test_rebase_rekeys_an_untouched_stale_lesson_clean_and_keeps_a_touched_one_flagged():
    old = make_skill(body=OLD)
    new = make_skill(
        body=OLD.replace("`pytest -x`", "`nox -s tests`").replace("Tag the release", "Tag it"), version="1.1"
    )
    hit, miss = _delta(old, "tests", TOUCHED), _delta(old, "tests", "Prefer small, focused test modules.")
    rel = _delta(old, "release", RELEASE)
    out = {o.delta.payload["body"]: o for o in rebase.rebase_deltas([hit, miss, rel], old.body, new, stale_touch=True)}
    assert out[TOUCHED].state == "stale" and out[TOUCHED].anchor == hit.anchor  # old digest: stays flagged
    assert "changed lines mention pytest" in out[TOUCHED].decision.reason
    assert anchor.locate(out[TOUCHED].anchor, new.body).state == "stale"
    assert out[RELEASE].state == "stale"  # "tag" and "release" are in its section's edited line
    quiet = out["Prefer small, focused test modules."]
    assert quiet.state == "clean" and quiet.decision.reason.startswith("section changed, but not what this lesson")
    assert quiet.anchor.base_version == "1.1" and anchor.locate(quiet.anchor, new.body).state == "clean"
    # the old behaviour, as a setting: every lesson on a changed section is flagged
    old_way = rebase.rebase_deltas([hit, miss, rel], old.body, new, stale_touch=False)
    assert [o.state for o in old_way] == ["stale", "stale", "stale"]


def test_a_lesson_flagged_before_this_update_stays_flagged():
    old = make_skill(body=OLD)
    older = make_skill(body=OLD.replace("Keep fixtures small", "Keep fixtures tiny"), version="0.9")
    before = _delta(older, "tests", "Prefer small, focused test modules.")  # written against an older text
    new = make_skill(body=OLD.replace("scratch files", "scrach files"), version="1.1")
    (o,) = rebase.rebase_deltas([before], old.body, new)
    assert o.state == "stale" and o.anchor.digest == before.anchor.digest


def test_a_removed_section_orphans_its_lessons_as_before():
    old = make_skill(body=OLD)
    new = make_skill(body=OLD.split("## Release")[0], version="1.1")
    (o,) = rebase.rebase_deltas([_delta(old, "release", "Prefer small, focused test modules.")], old.body, new)
    assert o.state == "orphaned"


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "overlay.db") as s:
        yield s


def test_apply_rekeys_untouched_lessons_with_an_audit_note_and_keeps_touched_ones_flagged(store):
    old = make_skill(body=OLD)
    store.register_base(old)
    ids = {}
    for body in (TOUCHED, "Prefer small, focused test modules."):
        r = gates.learn(store, old, "preference", {"body": body}, section="tests", provenance=TRUSTED)
        ids[body] = r.delta.id
    new = make_skill(body=OLD.replace("`pytest -x`", "`nox -s tests`"), version="1.1")
    result = rebase.apply(store, new, old=old, stale_touch=True)
    states = {o.delta.id: o.state for o in result.outcomes}
    assert states[ids[TOUCHED]] == "stale" and [o.delta.id for o in result.review] == [ids[TOUCHED]]
    quiet = store.get(ids["Prefer small, focused test modules."])
    assert anchor.locate(quiet.anchor, new.body).state == "clean" and quiet.anchor.base_version == "1.1"
    note = store.audit(quiet.id)[-1]
    assert note.who == "rebase" and "section changed, but not what this lesson refers to" in note.reason
    assert rebase.stale(new, [store.get(i) for i in ids.values()]) == (store.get(ids[TOUCHED]),)


def test_apply_with_the_old_behaviour_flags_every_lesson_on_the_changed_section(store):
    old = make_skill(body=OLD)
    store.register_base(old)
    r = gates.learn(store, old, "preference", {"body": "Prefer small modules."}, section="tests", provenance=TRUSTED)
    new = make_skill(body=OLD.replace("`pytest -x`", "`nox -s tests`"), version="1.1")
    result = rebase.apply(store, new, old=old, stale_touch=False)
    assert result.counts() == {"stale": 1} and store.get(r.delta.id).anchor == r.delta.anchor


# ------------------------------------------------------------------------------------------ the miner


def test_the_miner_flags_a_rule_event_only_on_a_change_that_touches_it():
    steps = (("tests\nRun the suite with pytest.", "tests\nRun the suite with nox.", False),)
    assert mine.touch_flags("When pytest hangs, pass a timeout.", steps, False) == (True, False)
    assert mine.touch_flags("Name tests after the behaviour.", steps, False) == (False, False)
    assert mine.touch_flags("Name tests after the behaviour.", steps, True) == (False, False)
    gone = steps + (("tests\nRun the suite with nox.", None, False),)  # the section gone at the fate
    assert mine.touch_flags("Name tests after the behaviour.", gone, True) == (False, True)
    orphaned = (("a\nb", "a\nc", True),)  # the policy orphaned the section: flagged as before
    assert mine.touch_flags("Unrelated words here.", orphaned, False) == (True, False)


def test_mined_events_carry_the_touch_flag_within_the_section_flag():
    head, rule = "# Rules\n\n## Style\n\n", "- Prefer f-strings for formatting.\n"
    texts = [
        head + "- Use ruff for linting.\n- Keep lines short.\n",
        head + "- Use ruff for linting.\n- Keep lines short.\n" + rule,
        head + "- Use black for linting.\n- Keep lines short.\n" + rule,
        head + "- Use black for linting.\n- Keep lines under 100 characters.\n" + rule,
    ]
    (e,) = mine.mine_texts([("CLAUDE.md", "CLAUDE.md", texts)]).events
    assert e.text == "Prefer f-strings for formatting." and e.fate == "kept"
    assert e.section_changed_before_fate and not e.section_touched_before_fate and len(e.steps) == 2
    record = e.to_record()
    assert record["section_touched_before_fate"] is False and "steps" not in record


def test_the_cli_applies_a_rebase_with_either_flag(tmp_path, capsys):
    """`rebase --apply --touch` narrows the flag as the API does; `--no-touch` flags every lesson on the changed
    section; without either the shipped setting decides."""
    files = {}
    for side, body, version in (("old", OLD, "1.0"), ("new", OLD.replace("`pytest -x`", "`nox -s tests`"), "1.1")):
        files[side] = tmp_path / side / "demo" / "SKILL.md"
        files[side].parent.mkdir(parents=True)
        head = f"---\nname: demo\ndescription: test skill\nmetadata:\n  gaia:\n    version: '{version}'\n---\n"
        files[side].write_text(head + body, encoding="utf-8")
    old = load_skill(files["old"])
    states = {}
    for flag in ("--touch", "--no-touch", None):
        db = tmp_path / f"{flag}.db"
        with Store.open(db) as store:
            store.register_base(old)
            for body in (TOUCHED, "Prefer small, focused test modules."):
                gates.learn(store, old, "preference", {"body": body}, section="tests", provenance=TRUSTED)
        capsys.readouterr()
        argv = ["rebase", str(files["old"]), str(files["new"]), "--apply", "--yes", "--json", "--db", str(db)]
        assert main(argv + ([flag] if flag else [])) == 0
        states[flag] = sorted(m["state"] for m in json.loads(capsys.readouterr().out)["applied"]["deltas"])
    assert states["--touch"] == ["clean", "stale"] and states["--no-touch"] == ["stale", "stale"]
    assert states[None] == states["--touch" if SHIPPED.stale_touch else "--no-touch"]
