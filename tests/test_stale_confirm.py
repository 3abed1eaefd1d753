"""Issue 37 §2, a stale lesson's life has an end: `rebase.confirm_stale` ("still valid") re-digests the anchors of
lessons whose section changed since they were learned, so the flag clears (one transaction, one undo); `overlay-kit
confirm SKILL [ID ...]` and the ReviewPanel's "Still valid" button call it; `stale_policy` (keep | mark | withhold,
`SHIPPED.stale_policy`) decides how resolve shows a stale lesson meanwhile."""

from __future__ import annotations

import json

import pytest
from cli_fixtures import run
from overlay_support import MAIL_BODY, make_skill
from overlay_widgets import ReviewPanel
from resolve_fixtures import learn_active

from overlay_kit import budget, gates, rebase
from overlay_kit.anchor import parse
from overlay_kit.defaults import SHIPPED
from overlay_kit.resolve import STALE_MARK, Session, compose, resolve
from overlay_kit.skill import find_skill
from overlay_kit.store import Store, StoreError

OLD = make_skill()
EDITED = MAIL_BODY.replace("Label urgent mail first.", "Label urgent mail first, then the rest.")
NEW = make_skill(body=EDITED, version="1.1")
CFO, VIP, DRAFT, SHORT = (
    "Flag the CFO's mail as urgent.",
    "Treat VIP senders as urgent.",
    "Keep drafts under five lines.",
    "Label urgent mail with short subjects.",
)


@pytest.fixture
def flagged(store):
    """After the update OLD → NEW (`rebase.apply`): two active lessons and a staged one on the edited `triage`
    section (stale), an active one on `replies` (clean)."""
    rebase.apply(store, OLD)
    ids = {
        "cfo": learn_active(store, OLD, "preference", {"body": CFO}, "triage").id,
        "vip": learn_active(store, OLD, "preference", {"body": VIP}, "triage").id,
        "draft": learn_active(store, OLD, "preference", {"body": DRAFT}, "replies").id,
        "staged": gates.learn(
            store, OLD, "preference", {"body": SHORT}, section="triage", provenance="user_instruction"
        ).delta.id,
    }
    result = rebase.apply(store, NEW, old=OLD)
    assert {o.delta.id: o.state for o in result.outcomes} == {
        ids["cfo"]: "stale",
        ids["vip"]: "stale",
        ids["draft"]: "clean",
        ids["staged"]: "stale",
    }
    return ids


def _stale_notes(eff) -> set[str]:
    return {n.delta_id for n in eff.notes_of("stale")}


def test_confirm_clears_every_flag_and_the_lessons_still_apply(store, flagged):
    before = resolve(NEW, store, embedder=False)
    assert _stale_notes(before) == {flagged["cfo"], flagged["vip"]}
    audit = len(store.audit())
    undo = rebase.confirm_stale(store, NEW)  # ids None: all of the update's flags, in one action
    assert undo.op == "confirm_stale" and set(undo.ids) == {flagged["cfo"], flagged["vip"], flagged["staged"]}
    triage = next(s for s in parse(NEW.body) if s.slug == "triage")
    for i in undo.ids:
        d = store.get(i)
        assert (d.anchor.section, d.anchor.digest, d.anchor.base_version) == ("triage", triage.digest, "1.1")
        assert store.audit(i)[-1].reason.startswith("confirmed still valid")
    assert len(store.audit()) == audit + 3 and store.get(flagged["staged"]).status == "staged"
    after = resolve(NEW, store, embedder=False)
    assert not after.notes_of("stale") and after.base == NEW.body
    assert {d.id for d in after.applied} == {d.id for d in before.applied}  # the same lessons apply
    section = {s.slug: s.text for s in parse(after.text)}["triage"]
    assert f"- {CFO}" in section and f"- {VIP}" in section  # now under their section, as clean lessons are
    assert rebase.stale(NEW, store.search("mail")) == ()
    assert not rebase.confirm_stale(store, NEW)  # nothing left to confirm: an empty handle


def test_confirming_named_ids_confirms_only_those(store, flagged):
    undo = rebase.confirm_stale(store, NEW, [flagged["vip"], flagged["vip"]])  # an id twice counts once
    assert undo.ids == (flagged["vip"],)
    assert _stale_notes(resolve(NEW, store, embedder=False)) == {flagged["cfo"]}


@pytest.mark.parametrize("which, why", [("draft", "is clean on the current body of mail"), ("gone", "is archived")])
def test_an_id_that_is_not_stale_refuses_the_batch_and_nothing_is_written(store, flagged, which, why):
    store.revert(flagged["staged"])
    flagged["gone"] = flagged["staged"]
    anchors = {i: store.get(i).anchor for i in flagged.values()}
    audit = len(store.audit())
    with pytest.raises(rebase.NotStaleError, match=f"delta {flagged[which]} {why}"):
        rebase.confirm_stale(store, NEW, [flagged["cfo"], flagged[which]])
    with pytest.raises(StoreError, match="delta_nope"):
        rebase.confirm_stale(store, NEW, [flagged["cfo"], "delta_nope"])
    assert {i: store.get(i).anchor for i in flagged.values()} == anchors and len(store.audit()) == audit


def test_undo_brings_the_flags_back(store, flagged):
    anchors = {i: store.get(i).anchor for i in flagged.values()}
    undo = rebase.confirm_stale(store, NEW)
    store.undo(undo)
    assert {i: store.get(i).anchor for i in flagged.values()} == anchors
    assert _stale_notes(resolve(NEW, store, embedder=False)) == {flagged["cfo"], flagged["vip"]}


# -------------------------------------------------------------------------------------------- stale_policy


def test_each_stale_policy_renders_as_specified(store, flagged):
    keep, mark, withhold = (resolve(NEW, store, embedder=False, stale_policy=p) for p in ("keep", "mark", "withhold"))
    assert resolve(NEW, store, embedder=False).text == mark.text and SHIPPED.stale_policy == "mark"
    assert f"- (Triage) {CFO}" in keep.text and STALE_MARK not in keep.text
    for lesson in (CFO, VIP):  # mark: the marker right before each stale lesson, the clean one unmarked
        assert f"- (Triage) {STALE_MARK}{lesson}" in mark.text
    assert f"- {DRAFT}" in mark.text and mark.text.count(STALE_MARK.strip()) == 2
    assert {d.id for d in mark.applied} == {d.id for d in keep.applied}
    assert mark.tokens == budget.count_tokens(mark.text) > keep.tokens  # the budget counts the marked text
    assert CFO not in withhold.text and VIP not in withhold.text and f"- {DRAFT}" in withhold.text
    assert {n.delta_id for n in withhold.notes_of("withheld")} == {flagged["cfo"], flagged["vip"]}
    assert all("withheld as stale" in n.detail for n in withhold.notes_of("withheld"))
    assert {d.id for d in withhold.applied} == {flagged["draft"]}
    assert "learned-adjustments" not in {s.slug for s in parse(withhold.text)}


def test_the_policy_reaches_compose_and_sessions_and_a_bad_one_is_named(store, flagged):
    deltas = store.search("mail", status="active")
    assert STALE_MARK + CFO in compose(NEW, deltas, stale_policy="mark").text
    assert CFO not in Session(store, embedder=False, stale_policy="withhold").resolve(NEW).text
    for call in (
        lambda: compose(NEW, deltas, stale_policy="hide"),
        lambda: resolve(NEW, store, stale_policy="hide"),
        lambda: Session(store, stale_policy="hide"),
    ):
        with pytest.raises(ValueError, match="stale_policy must be one of keep, mark, withhold, not 'hide'"):
            call()


# ---------------------------------------------------------------------------------------------------- CLI


def test_cli_confirm_end_to_end(capsys, tmp_path, skill_dir):
    db = tmp_path / "o.db"
    with Store.open(db) as s:
        mail = find_skill(str(skill_dir))
        a = learn_active(s, mail, "preference", {"body": CFO}, "triage").id
        b = learn_active(s, mail, "preference", {"body": DRAFT}, "replies").id
    md = skill_dir / "SKILL.md"
    md.write_text(md.read_text().replace("Label urgent mail first.", "Label urgent mail first, then the rest."))
    code, _, err = run(capsys, "resolve", skill_dir, "--db", db)
    assert code == 0 and f"# stale {a}" in err
    code, _, err = run(capsys, "confirm", skill_dir, b, "--db", db)  # not stale: exit 1, one line, nothing written
    assert code == 1 and f"delta {b} is clean" in err and err.count("\n") == 1
    code, out, _ = run(capsys, "confirm", skill_dir, "--db", db)
    assert code == 0 and out == (
        f"confirm: {a} still valid on mail#triage (no longer stale)\nconfirm: 1 stale delta(s) of mail confirmed\n"
    )
    code, _, err = run(capsys, "resolve", skill_dir, "--db", db)
    assert code == 0 and "# stale" not in err and f"# applied {a}" in err
    code, out, _ = run(capsys, "confirm", skill_dir, "--db", db, "--json")
    assert code == 0 and json.loads(out) == {"op": "confirm", "skill": "mail", "deltas": []}
    code, _, err = run(capsys, "confirm", skill_dir, "--db", tmp_path / "missing.db")
    assert code == 1 and "no database" in err and not (tmp_path / "missing.db").exists()


# ------------------------------------------------------------------------------------------------ widget


def test_review_panel_still_valid_confirms_every_stale_flag_shown_in_one_click(store, flagged):
    panel = ReviewPanel(store, [NEW])
    assert {d.id for d in panel.stale("mail")} == {flagged["cfo"], flagged["vip"], flagged["staged"]}
    assert {d.id for d in ReviewPanel(store, [NEW], show_active=False).stale("mail")} == {flagged["staged"]}
    panel.button("mail", "Still valid").click()
    assert panel.history[-1][2].op == "confirm_stale" and "done" in panel.message.value
    assert not panel.stale("mail") and ("mail", "Still valid") not in panel._buttons  # refreshed
    assert not resolve(NEW, store, embedder=False).notes_of("stale")
    panel.undo()
    assert ("mail", "Still valid") in panel._buttons and len(panel.stale("mail")) == 3


def test_review_panel_still_valid_on_a_lesson_confirmed_elsewhere_does_nothing_and_says_so(store, flagged):
    panel = ReviewPanel(store, [NEW])
    rebase.confirm_stale(store, NEW, [flagged["cfo"]])  # another cell, after the panel was drawn
    panel.button("mail", "Still valid").click()
    assert f"delta {flagged['cfo']} is clean" in panel.message.value and not panel.history
    assert {d.id for d in panel.stale("mail")} == {flagged["vip"], flagged["staged"]}  # untouched, redrawn
    assert panel.button("mail", "Still valid").description == "Still valid: confirm 2 stale lesson(s) of mail"
