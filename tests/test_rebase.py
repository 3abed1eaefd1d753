"""overlay_kit.rebase: the four policies, the duplicate-heading trap, narrowing, and the store round trip."""

import hashlib
import json

import numpy as np
import pytest
from overlay_support import TRUSTED, UNTRUSTED, make_skill

from overlay_kit import anchor, gates, rebase, resolve
from overlay_kit.cli import main
from overlay_kit.store import Store, StoreError

BASE = """# Mail

Sort the inbox.

## Triage

Label urgent mail first. Then label the newsletters.

## Notes

Never forward invoices without asking the owner.

## Replies

Draft replies; never send without asking.

## Notes

Keep a short log of every escalation and its outcome.
"""


def plan(old, new, policy="section", **kw):
    return rebase.plan(old, new, rebase.get_policy(policy, **kw)).by_section


class BagOfWords:
    """A real (if tiny) embedder: hashed word counts. Deterministic, no model download."""

    def encode(self, texts):
        out = np.zeros((len(texts), 256), dtype="float32")
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, int(hashlib.md5(w.strip(".,;:").encode()).hexdigest(), 16) % 256] += 1
        return out


# ------------------------------------------------------------------------------------------ policies


def test_policies_by_name_and_unknown_name():
    assert set(rebase.POLICIES) == {"orphan-all", "section", "fuzzy", "embedding"}
    for name in rebase.POLICIES:
        assert rebase.get_policy(name).name == name
        assert isinstance(rebase.get_policy(name), rebase.Policy)
    with pytest.raises(ValueError, match="unknown rebase policy 'best'.*orphan-all"):
        rebase.get_policy("best")


@pytest.mark.parametrize("policy", ["orphan-all", "section", "fuzzy"])
def test_unchanged_body_is_clean_everywhere(policy):
    d = plan(BASE, BASE, policy)
    assert {x.state for x in d.values()} == {"clean"} and all(x.target == x.section for x in d.values())


def test_orphan_all_orphans_everything_on_any_body_change_even_whitespace():
    d = plan(BASE, BASE.replace("first.", "first.   "), "orphan-all")
    assert {x.state for x in d.values()} == {"orphaned"} and not any(x.proposal for x in d.values())
    assert plan(BASE, BASE.replace("first.", "first.   "))["triage"].state == "clean"  # section: digest same


def test_section_policy_clean_stale_orphaned():
    new = BASE.replace("Then label the newsletters.", "Then label the receipts.").replace(
        "## Replies\n\nDraft replies; never send without asking.\n\n", ""
    )
    d = plan(BASE, new)
    assert d["triage"].state == "stale" and d["triage"].target == "triage"
    assert d["replies"].state == "orphaned" and d["replies"].reason == "section gone"
    assert d["notes"].state == "clean" and d["notes-1"].state == "clean"
    assert d["mail"].state == "clean"


def test_inserting_a_same_named_section_above_never_misattaches():
    """The trap: a new "Notes" above renumbers notes → notes-1. Same slug is not the same section."""
    new = BASE.replace("## Notes\n\nNever forward", "## Notes\n\nAlways cc the team lead.\n\n## Notes\n\nNever forward")
    new = new.replace(
        "Never forward invoices without asking the owner.", "Never forward invoices without asking the owner first."
    )
    slugs = [s.slug for s in anchor.parse(new)]
    assert slugs.count("notes") == 1 and "notes-2" in slugs
    d = plan(BASE, new)
    assert d["notes"].state == "orphaned"  # edited AND renumbered: ambiguous, so never attached
    assert "not provably the same" in d["notes"].reason
    assert d["notes-1"].state == "clean" and d["notes-1"].target == "notes-2"  # same text, re-keyed
    assert "re-keyed notes-1 → notes-2" in d["notes-1"].reason
    # anchor.locate alone would have called it stale on the NEW notes: the reason rebase re-keys anchors
    old_anchor = anchor.anchor_for(BASE, "notes")
    assert anchor.locate(old_anchor, new).state == "stale"
    fz = plan(BASE, new, "fuzzy")["notes"]
    assert fz.state == "orphaned" and fz.proposal.section == "notes-1"  # proposed, not applied


def test_same_heading_with_a_rewritten_body_is_orphaned_not_stale():
    new = BASE.replace(
        "Label urgent mail first. Then label the newsletters.", "Summarize calendar conflicts for tomorrow morning."
    )
    d = plan(BASE, new)
    assert d["triage"].state == "orphaned"
    assert plan(BASE, new, min_similarity=0.0)["triage"].state == "stale"  # the gate is what refuses it


def test_renamed_heading_orphans_with_a_fuzzy_proposal():
    new = BASE.replace("## Replies", "## Answering mail")
    assert plan(BASE, new)["replies"].state == "orphaned"
    fz = plan(BASE, new, "fuzzy")["replies"]
    assert fz.state == "orphaned" and fz.proposal.section == "answering-mail" and fz.proposal.score > 0.8
    em = plan(BASE, new, rebase.EmbeddingPolicy(embedder=BagOfWords(), min_score=0.5))["replies"]
    assert em.state == "orphaned" and em.proposal.section == "answering-mail" and em.proposal.method == "embedding"


def test_merged_away_section_gets_its_host_proposed():
    new = BASE.replace("\n## Replies\n\n", "\n")  # Replies' body folds into the Notes before it
    fz = plan(BASE, new, "fuzzy")
    assert fz["replies"].state == "orphaned" and fz["replies"].proposal.section == "notes"
    assert fz["notes"].state == "stale"


def test_deleted_section_gets_no_confident_proposal():
    new = BASE.replace("## Replies\n\nDraft replies; never send without asking.\n\n", "")
    assert plan(BASE, new, "fuzzy")["replies"].proposal is None


STEPS = (
    "# Run\n\n## Step 1: Drain\n\nDrain the writes.\n\n## Step 2: Promote\n\nPromote the replica.\n\n"
    "## Step 3: Verify\n\nCheck the lag twice.\n\n"
)


def test_renumbered_steps_are_stale_not_orphaned():
    new = (
        STEPS.replace("## Step 1: Drain\n\nDrain the writes.\n\n", "")
        .replace("Step 2", "Step 1")
        .replace("Step 3", "Step 2")
    )
    d = plan(STEPS, new)
    assert d["step-1-drain"].state == "orphaned"
    assert (d["step-2-promote"].state, d["step-2-promote"].target) == ("stale", "step-1-promote")
    assert d["step-3-verify"].target == "step-2-verify" and "renumbered" in d["step-3-verify"].reason
    assert plan(STEPS, new, renumbering=False)["step-3-verify"].state == "orphaned"
    edited = new.replace("Check the lag twice.", "Check the lag once.")
    assert plan(STEPS, edited)["step-3-verify"].state == "orphaned"  # renumbered AND edited: not provable
    twins = (
        "# Run\n\n## Step 1: Drain\n\nA.\n\n## Step 2: Fence\n\nB.\n\n## Step 3: Verify\n\nCheck it.\n\n"
        "## Step 4: Verify\n\nCheck it.\n\n"
    )
    after = "# Run\n\n## Step 1: Verify\n\nCheck it.\n\n## Step 2: Verify\n\nCheck it.\n\n"
    d = plan(twins, after)
    assert d["step-3-verify"].state == d["step-4-verify"].state == "orphaned"  # two candidates: never guessed


def test_level_change_and_whitespace_keep_section_clean():
    new = BASE.replace("## Replies", "### Replies").replace("Sort the inbox.", "Sort  the\ninbox.")
    d = plan(BASE, new)
    assert d["replies"].state == "clean" and d["mail"].state == "clean"


def test_headingless_body_anchors_whole_body():
    d = plan("Just do it.\n", "Just do it now.\n")
    assert d[anchor.BODY].state == "stale"
    assert plan("Just do it.\n", "Something else entirely.\n")[anchor.BODY].state == "orphaned"


def test_plan_for_anchor_written_against_older_text_is_stale_not_clean():
    old_anchor = anchor.Anchor("triage", "0" * 16)
    p = rebase.plan(BASE, BASE + "\n## Extra\n\nMore.\n")
    assert p.for_anchor(old_anchor, anchor.parse(BASE)).state == "stale"
    assert p.for_anchor(anchor.Anchor("nowhere", "x"), anchor.parse(BASE)).state == "orphaned"


# ------------------------------------------------------------------------------------------ deltas


def _delta(skill, section, kind="preference", payload=None):
    from overlay_kit.grammar import Delta, Provenance

    return Delta(
        skill.name,
        kind,
        payload or {"body": "Be brief."},
        anchor.anchor_for(skill.body, section, skill.version),
        Provenance(TRUSTED),
    )


def test_permission_narrowing_wins_over_a_clean_body():
    old = make_skill(body=BASE)
    new = make_skill(body=BASE, tools=("search_mail",))  # draft_reply no longer declared
    hint = _delta(old, "replies", "tool-hint", {"prefer": ["draft_reply"], "drop": []})
    pref = _delta(old, "replies")
    out = {o.delta.kind: o for o in rebase.rebase_deltas([hint, pref], old.body, new)}
    assert out["tool-hint"].state == "orphaned" and "no_new_tool" in out["tool-hint"].narrowed
    assert out["preference"].state == "clean"
    capable = make_skill(body=BASE, permissions=("shell:execute",))
    assert all(
        o.state == "orphaned" and "capability_bearing" in o.narrowed
        for o in rebase.rebase_deltas([hint, pref], old.body, capable)
    )


def test_without_the_old_body_only_exact_text_is_trusted():
    old = make_skill(body=BASE)
    new = make_skill(body=BASE.replace("Then label the newsletters.", "Then label receipts."), version="1.1")
    out = {
        o.delta.anchor.section: o
        for o in rebase.rebase_deltas([_delta(old, "triage"), _delta(old, "replies")], None, new)
    }
    assert out["triage"].state == "orphaned" and out["replies"].state == "clean"
    assert out["replies"].anchor.base_version == "1.1"


def test_stale_keeps_its_old_digest_so_it_stays_flagged_and_rekey_moves_the_slug():
    old = make_skill(body=BASE)
    new_body = BASE.replace("## Notes\n\nNever forward", "## Notes\n\nAlways cc the lead.\n\n## Notes\n\nNever forward")
    new = make_skill(body=new_body.replace("Then label the newsletters.", "Then label receipts."))
    triage = _delta(old, "triage", payload={"body": "Label newsletters by sender."})  # the edited line's subject
    out = {o.delta.anchor.section: o for o in rebase.rebase_deltas([triage, _delta(old, "notes-1")], old.body, new)}
    assert out["triage"].anchor == anchor.Anchor("triage", old_digest("triage", old), old.version)
    assert anchor.locate(out["triage"].anchor, new.body).state == "stale"
    moved = out["notes-1"].anchor
    assert moved.section == "notes-2" and anchor.locate(moved, new.body).state == "clean"


def old_digest(slug, skill):
    return anchor.anchor_for(skill.body, slug).digest


# ------------------------------------------------------------------------------------------ store


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "overlay.db") as s:
        yield s


def learn(store, skill, section, source=TRUSTED, kind="preference", payload=None):
    r = gates.learn(
        store, skill, kind, payload or {"body": f"Lesson for {section}."}, section=section, provenance=source
    )
    assert r.delta is not None, r.message
    return r.delta


def setup_store(store):
    old = make_skill(body=BASE)
    store.register_base(old)
    ids = {s: learn(store, old, s).id for s in ("notes", "replies")}
    ids["triage"] = learn(store, old, "triage", payload={"body": "Label newsletters by sender."}).id
    store.approve(ids["triage"])
    ids["untrusted"] = learn(store, old, "notes-1", source=UNTRUSTED).id
    return old, ids


def test_apply_moves_statuses_atomically_with_audit_and_reasons(store):
    old, ids = setup_store(store)
    new_body = (
        BASE.replace("Then label the newsletters.", "Then label receipts.")
        .replace("## Replies", "## Answering mail")
        .replace("## Notes\n\nNever forward", "## Notes\n\nAlways cc the lead.\n\n## Notes\n\nNever forward")
    )
    new = make_skill(body=new_body, version="1.1")
    result = rebase.apply(store, new, "fuzzy", old=old)
    states = {o.delta.id: o.state for o in result.outcomes}
    assert states[ids["triage"]] == "stale" and store.get(ids["triage"]).status == "active"
    assert states[ids["replies"]] == "orphaned" and store.get(ids["replies"]).status == "orphaned"
    assert states[ids["notes"]] == "clean" and store.get(ids["notes"]).anchor.section == "notes-1"  # re-keyed
    assert states[ids["untrusted"]] == "clean"
    assert store.get(ids["untrusted"]).status == "quarantined"
    assert store.get(ids["untrusted"]).anchor.section == "notes-2"  # re-keyed, audited
    audit = store.audit(ids["replies"])[-1]
    assert audit.who == "rebase" and audit.to_status == "orphaned"
    assert "proposal: answering-mail" in audit.reason and "not applied" in audit.reason
    assert [e.who for e in store.audit(ids["untrusted"])][-1] == "rebase"
    assert len(result.review) == 2 and result.counts() == {"clean": 2, "stale": 1, "orphaned": 1}
    json.dumps(result.to_dict())


def test_apply_frontmatter_only_changes_nothing_and_first_sighting_is_quiet(store):
    old, ids = setup_store(store)
    before = {i: (store.get(i).status, store.get(i).anchor) for i in ids.values()}
    r = rebase.apply(store, make_skill(body=BASE, version="2.0"), "orphan-all", old=old)
    assert r.change.changed and {o.state for o in r.outcomes} == {"clean"}
    assert {i: (store.get(i).status, store.get(i).anchor) for i in ids.values()} == before
    assert rebase.apply(store, make_skill("other", body=BASE), "orphan-all").outcomes == ()


def test_apply_orphan_all_then_bulk_reapprove_restores_each_status(store):
    old, ids = setup_store(store)
    new = make_skill(body=BASE.replace("Sort the inbox.", "Sort the inbox daily."), version="1.1")
    r = rebase.apply(store, new, "orphan-all", old=old)
    assert {store.get(i).status for i in ids.values()} == {"orphaned"} and len(r.undo) == 4
    assert not resolve.resolve(new, store).applied  # nothing re-applies until the user says so
    done = rebase.reapprove(store, new)
    assert set(done) == set(ids.values())
    assert store.get(ids["triage"]).status == "active"  # was active
    assert store.get(ids["notes"]).status == "staged"  # was staged: re-approval is not approval
    assert store.get(ids["untrusted"]).status == "quarantined"  # bulk never releases quarantine
    eff = resolve.resolve(new, store)
    assert [d.id for d in eff.applied] == [ids["triage"]]  # its section is unchanged: applies under it
    assert "Label newsletters by sender." in eff.text.split("## Notes")[0]


def test_rekeyed_anchor_resolves_under_the_right_section(store):
    """After a same-named section is inserted above, the resolver must not put the lesson under it."""
    old = make_skill(body=BASE)
    store.register_base(old)
    d = learn(store, old, "notes-1")
    store.approve(d.id)
    new = make_skill(
        body=BASE.replace("## Notes\n\nNever forward", "## Notes\n\nAlways cc the lead.\n\n## Notes\n\nNever forward"),
        version="1.1",
    )
    rebase.apply(store, new, "section", old=old)
    eff = resolve.resolve(new, store)
    assert [x.id for x in eff.applied] == [d.id]
    tail = eff.text.split("Keep a short log of every escalation and its outcome.")[1]
    assert "Lesson for notes-1." in tail  # under the old second "Notes", now notes-2


def test_reanchor_accepts_a_proposal_and_discard_archives(store):
    old, ids = setup_store(store)
    new = make_skill(body=BASE.replace("## Replies", "## Answering mail"), version="1.1")
    r = rebase.apply(store, new, "fuzzy", old=old)
    proposal = next(o for o in r.outcomes if o.delta.id == ids["replies"]).decision.proposal
    d = rebase.reanchor(store, ids["replies"], new, proposal.section)
    assert d.status == "staged" and d.anchor.section == "answering-mail"
    assert anchor.locate(d.anchor, new.body).state == "clean"
    with pytest.raises(StoreError, match="not orphaned"):
        rebase.reanchor(store, ids["replies"], new, "triage")
    rebase.apply(store, make_skill(body=BASE.replace("Sort the inbox.", "Sort."), version="1.2"), "orphan-all", old=new)
    rebase.discard(store, ids["notes"])
    assert store.get(ids["notes"]).status == "archived"
    with pytest.raises(StoreError, match="no section"):
        rebase.reanchor(
            store, ids["triage"], make_skill(body=BASE.replace("Sort the inbox.", "Sort."), version="1.2"), "nowhere"
        )


def test_apply_is_atomic_when_a_policy_fails(store):
    old, ids = setup_store(store)

    class Broken:
        name = "broken"

        def decide(self, update):
            raise RuntimeError("boom")

    history = store.base_history(old.name)
    with pytest.raises(RuntimeError, match="boom"):
        rebase.apply(store, make_skill(body=BASE + "\nMore.\n", version="9"), Broken(), old=old)
    assert store.base_history(old.name) == history
    assert store.get(ids["triage"]).status == "active"


def test_apply_ignores_an_old_skill_that_is_not_the_registered_base(store):
    old, ids = setup_store(store)
    impostor = make_skill(body=BASE.replace("Label urgent mail first.", "Label urgent mail."))
    new = make_skill(body=BASE.replace("Then label the newsletters.", "Then label receipts."), version="1.1")
    r = rebase.apply(store, new, "section", old=impostor)
    assert {o.delta.id: o.state for o in r.outcomes}[ids["triage"]] == "orphaned"  # exact-only fallback


# ---------------------------------------------------------------------------------------------- CLI


def write_skill(root, body, version):
    d = root / "mail"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(
        f"---\nname: mail\ndescription: test\nmetadata:\n  gaia:\n    version: '{version}'\n---\n{body}",
        encoding="utf-8",
    )
    return d


def test_cli_rebase_json_and_text(tmp_path, capsys):
    old = write_skill(tmp_path / "v1", BASE, "1.0")
    new = write_skill(tmp_path / "v2", BASE.replace("## Replies", "## Answering mail"), "1.1")
    assert main(["rebase", str(old), str(new), "--policy", "fuzzy", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["policy"] == "fuzzy" and out["body_changed"] is True
    rows = {r["section"]: r for r in out["sections"]}
    assert rows["replies"]["state"] == "orphaned" and rows["replies"]["proposal"]["section"] == "answering-mail"
    assert rows["triage"] == {**rows["triage"], "state": "clean", "target": "triage"}
    assert main(["rebase", str(old), str(new)]) == 0
    text = capsys.readouterr().out
    assert "replies" in text and "orphaned" in text
    with pytest.raises(SystemExit) as exc:
        main(["rebase", str(old), str(new), "--policy", "nope"])
    assert exc.value.code == 2
