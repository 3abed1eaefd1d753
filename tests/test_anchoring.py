"""`anchoring.propose` and the learning path without a section (`learn_anchored`, `overlay-kit learn`), and the
committed accuracy figures (`datasets/histories/anchoring_results.json`) against their split and the README."""

import csv
import hashlib
import json
from pathlib import Path

import pytest
from cli_fixtures import run

from overlay_kit import anchoring
from overlay_kit.anchor import BODY, parse
from overlay_kit.anchoring import Proposal, learn_anchored, propose
from overlay_kit.defaults import SHIPPED
from overlay_kit.skill import load_skill
from overlay_kit.store import Store

REPO = Path(__file__).resolve().parents[1]

BODY_TEXT = """# Mail

## Classifying

Decide the urgency of each message from its sender, subject and deadline.

## Replying

Draft polite replies; sign each reply with the user's name and a greeting.

## Archiving

Move newsletters and receipts to the archive folder after a week.
"""


def test_obvious_cases_land_on_their_section():
    assert propose(BODY_TEXT, "Sign replies with 'Best regards' and keep the greeting short").section == "replying"
    assert propose(BODY_TEXT, "Receipts go to the archive folder straight away").section == "archiving"
    assert propose(BODY_TEXT, "A deadline in the subject makes a message urgent").section == "classifying"


def test_the_proposal_shape():
    p = propose(BODY_TEXT, "sign each reply with my name", k=2)
    assert isinstance(p, Proposal) and len(p.alternatives) == 2 and p.alternatives[0][0] == p.section
    scores = [s for _, s in p.alternatives]
    assert scores == sorted(scores, reverse=True)
    assert p.confidence == pytest.approx(scores[0] - scores[1])
    assert p.threshold == SHIPPED.anchor_confidence
    assert set(p.to_dict()) == {"section", "confidence", "threshold", "confident", "alternatives"}


def test_sections_or_a_body_give_the_same_proposal():
    assert propose(parse(BODY_TEXT), "archive receipts") == propose(BODY_TEXT, "archive receipts")


def test_ties_go_to_the_earlier_section():
    body = "## Alpha\n\nsame words here\n\n## Beta\n\nsame words here\n"
    lexical_only = {p: 0.0 for p in anchoring.PARTS} | {"lexical": 1.0}
    p = propose(body, "nothing in common", weights=lexical_only)  # every score 0
    assert p.section == "alpha" and p.confidence == 0.0
    assert [s for s, _ in p.alternatives] == ["alpha", "beta"]


def test_a_headingless_body_has_one_candidate_and_full_confidence():
    p = propose("Just do the thing carefully.\n", "be careful")
    assert p.section == BODY and p.confidence == 1.0 and p.confident


def test_an_empty_preamble_is_never_proposed_but_a_real_one_may_be():
    assert "_preamble" not in [s for s, _ in propose(BODY_TEXT, "mail", k=10).alternatives]
    with_preamble = "Always answer in French.\n\n## Archiving\n\nMove receipts to the archive.\n"
    assert "_preamble" in [s for s, _ in propose(with_preamble, "answer in French", k=10).alternatives]


def test_an_empty_body_has_nothing_to_propose():
    with pytest.raises(ValueError):
        propose("", "anything")


def test_the_goal_is_read():
    base = propose(BODY_TEXT, "do it like this")
    helped = propose(BODY_TEXT, "do it like this", goal="archive the old receipts folder")
    assert helped.section == "archiving" and helped.alternatives != base.alternatives


@pytest.fixture
def mail_skill(tmp_path):
    d = tmp_path / "mail"
    d.mkdir()
    (d / "SKILL.md").write_text("---\nname: mail\ndescription: triage mail\n---\n" + BODY_TEXT)
    return d


def test_low_confidence_asks_and_writes_nothing(mail_skill, tmp_path):
    skill = load_skill(mail_skill)
    with Store.open(tmp_path / "o.db") as store:
        proposal, result = learn_anchored(
            store, skill, "preference", {"body": "sign replies with my name"}, provenance="user_instruction"
        )
        assert not proposal.confident and result is None
        assert store.search("mail") == []


def test_confident_proposals_learn_through_learn(mail_skill, tmp_path):
    skill = load_skill(mail_skill)
    with Store.open(tmp_path / "o.db") as store:
        proposal, result = learn_anchored(
            store,
            skill,
            "preference",
            {"body": "sign replies with my name"},
            provenance="user_instruction",
            threshold=0.0,
        )
        assert proposal.confident and result.outcome == "staged"
        assert result.delta.anchor.section == proposal.section == "replying"


def test_cli_without_a_section_asks_with_the_proposal(mail_skill, tmp_path, capsys):
    db = tmp_path / "o.db"
    code, out, _ = run(
        capsys,
        "learn",
        mail_skill,
        "--kind",
        "preference",
        "--body",
        "sign replies with my name",
        "--source",
        "user_instruction",
        "--db",
        db,
        "--json",
    )
    doc = json.loads(out)
    assert code == 1 and doc["outcome"] == "asked" and not doc["persisted"] and doc["delta"] is None
    assert doc["anchoring"]["section"] == "replying" and doc["anchoring"]["confident"] is False
    assert [a["section"] for a in doc["anchoring"]["alternatives"]][0] == "replying"
    assert set(doc["anchoring"]["alternatives"][0]) == {"section", "score"}
    assert not db.exists() or Store.open(db).search("mail") == []
    code, out, _ = run(
        capsys,
        "learn",
        mail_skill,
        "--kind",
        "preference",
        "--body",
        "sign replies with my name",
        "--source",
        "user_instruction",
        "--db",
        db,
        "--section",
        "auto",
    )
    assert code == 1 and out.startswith("asked:") and "--section replying" in out and "§archiving" in out


def test_cli_with_one_candidate_anchors_and_says_so(tmp_path, capsys):
    d = tmp_path / "plain"
    d.mkdir()
    (d / "SKILL.md").write_text("---\nname: plain\ndescription: a plain skill\n---\nWrite clearly.\n")
    code, out, _ = run(
        capsys,
        "learn",
        d,
        "--kind",
        "preference",
        "--body",
        "use short words",
        "--source",
        "user_instruction",
        "--db",
        tmp_path / "o.db",
        "--json",
    )
    doc = json.loads(out)
    assert code == 0 and doc["outcome"] == "staged" and doc["delta"]["anchor"]["section"] == BODY
    assert doc["anchoring"]["section"] == BODY and doc["anchoring"]["confident"] is True


def test_cli_with_a_section_does_not_propose(mail_skill, tmp_path, capsys):
    code, out, _ = run(
        capsys,
        "learn",
        mail_skill,
        "--kind",
        "preference",
        "--body",
        "x y z",
        "--section",
        "archiving",
        "--source",
        "user_instruction",
        "--db",
        tmp_path / "o.db",
        "--json",
    )
    doc = json.loads(out)
    assert code == 0 and doc["anchoring"] is None and doc["delta"]["anchor"]["section"] == "archiving"


# ----------------------------------------------------------------------------- the committed figures

RESULTS = REPO / "datasets/histories/anchoring_results.json"
SPLIT = REPO / "datasets/histories/anchoring_split.csv"


def test_the_committed_results_match_the_split_and_the_shipped_settings():
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    assert results["split"]["sha256"] == hashlib.sha256(SPLIT.read_bytes()).hexdigest()
    with open(SPLIT, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:  # the fixed rule the split was drawn by
        held = int(hashlib.sha256(row["repository"].encode()).hexdigest(), 16) % 3 == 0
        assert row["split"] == ("heldout" if held else "dev")
    assert sorted(results["split"]["heldout"]) == sorted(r["repository"] for r in rows if r["split"] == "heldout")
    assert set(results["heldout"]["per_repository"]) <= set(results["split"]["heldout"])
    assert set(results["dev"]["per_repository"]) <= set(results["split"]["dev"])
    assert results["weights"] == dict(anchoring.WEIGHTS) and results["threshold"] == SHIPPED.anchor_confidence
    per = results["heldout"]["per_repository"].values()
    assert sum(r["n"] for r in per) == results["heldout"]["n_events"]
    assert sum(r["top1"] for r in per) / results["heldout"]["n_events"] == pytest.approx(
        results["heldout"]["top1"]["estimate"], abs=1e-4
    )

    def keys(node):
        if isinstance(node, dict):
            for k, v in node.items():
                yield k
                yield from keys(v)

    assert not {"text", "label", "slug", "slugs"} & set(keys(results))  # text-free: counts, figures, names


def test_the_readme_states_the_held_out_figures():
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for name in ("top1", "top3"):
        f = results["heldout"][name]
        assert f"{f['estimate']:.2f} [{f['low']:.2f}, {f['high']:.2f}]" in readme
