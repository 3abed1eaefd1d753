"""Study 16 (real histories): the committed corpus is what the manifest names, text-free; the figures are the
rule's arithmetic over repositories; the verdicts can come out either way; `build` mines a local mirror."""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import os
import subprocess

import pandas as pd
import pytest

from overlay_kit.metrics import Interval
from overlay_kit.resources import dataset_path
from overlay_kit.studies import histories, rulefile

RULE = rulefile.load("16_real_histories")


def _events(rows: list[tuple[str, str, bool, bool, int]]) -> pd.DataFrame:
    """(repo, fate, section changed before, at fate, versions survived) per event."""
    return pd.DataFrame(
        [
            {
                "repo": r,
                "fate": f,
                "section_changed_before_fate": b,
                "section_changed_at_fate": a,
                "section_edited_before_fate": b,
                "section_edited_at_fate": a,
                "versions_survived": v,
            }
            for r, f, b, a, v in rows
        ]
    )


def test_the_stale_flag_confusion_is_counted_as_the_rule_says():
    ev = _events(
        [
            ("a", "deleted", True, False, 0),
            ("a", "kept", True, False, 5),
            ("a", "reworded", False, True, 1),
            ("b", "deleted", False, False, 0),
            ("b", "kept", False, False, 9),
            ("b", "moved", True, True, 0),  # apart
            ("b", "kept", True, False, 1),
        ]
    )  # censored: followed for 1 < min_followup versions
    s = histories.stale_premise(ev, RULE)
    assert (s["events"], s["moved"], s["censored"], s["wrong"], s["flagged"]) == (5, 1, 1, 3, 3)
    assert s["precision"].estimate == pytest.approx(2 / 3) and s["recall"].estimate == pytest.approx(2 / 3)
    assert s["rd"].estimate == pytest.approx(2 / 3 - 1 / 2)


@pytest.mark.parametrize("flagged_wrong, verdict", [(0.9, "supported"), (0.1, "not supported")])
def test_the_premise_verdict_can_come_out_either_way(flagged_wrong, verdict):
    rows = []
    for r in range(30):  # 30 repositories, 20 events each: a flagged rule goes wrong at `flagged_wrong`, else 0.1
        for k in range(10):
            rows.append((f"r{r}", "deleted" if k < 10 * flagged_wrong else "kept", True, False, 5))
            rows.append((f"r{r}", "deleted" if k < 1 else "kept", False, False, 5))
    rd = histories.stale_premise(_events(rows), RULE)["rd"]
    assert histories._three_way(rd, RULE.param("rd_margin"), "supported", "not supported", strict=True) == verdict


def test_survival_and_append_share_pool_over_repositories():
    pairs = pd.DataFrame(
        [
            {"repo": "a", "body_changed": True, "sections_old": 4, "orphaned": 1, "edit_class": "in-section-edit"},
            {"repo": "a", "body_changed": True, "sections_old": 2, "orphaned": 0, "edit_class": "append-only"},
            {"repo": "b", "body_changed": True, "sections_old": 4, "orphaned": 3, "edit_class": "rewrite"},
            {"repo": "b", "body_changed": False, "sections_old": 9, "orphaned": 9, "edit_class": "frontmatter-only"},
        ]
    )
    s = histories.survival(pairs, RULE)
    assert s["all"].estimate == pytest.approx(1 - 4 / 10) and s["rewrite"].estimate == pytest.approx(1 / 4)
    assert histories.append_share(pairs, RULE).estimate == pytest.approx(1 / 3)
    assert histories._three_way(Interval(0.95, 0.91, 0.99), 0.9, "holds", "fails") == "holds"
    assert histories._three_way(Interval(0.5, 0.4, 0.6), 0.9, "holds", "fails") == "fails"
    assert histories._three_way(Interval(0.9, 0.8, 0.95), 0.9, "holds", "fails") == "undecided"


def test_the_committed_corpus_is_the_manifests_text_free_and_large_enough():
    manifest = dataset_path(*histories.MANIFEST)
    raw = json.loads(gzip.decompress(dataset_path(*histories.DERIVED).read_bytes()))
    assert raw["manifest"]["sha256"] == hashlib.sha256(manifest.read_bytes()).hexdigest()
    with open(manifest, newline="", encoding="utf-8") as fh:
        names = {r["repository"] for r in csv.DictReader(fh)}
    assert not names & histories.RESERVED
    assert {r["repo"] for r in raw["repos"]} == names
    files = pd.DataFrame(raw["files"])
    five = files[files["versions"] >= 5]
    assert len(five) >= 200 and five["repo"].nunique() >= 50  # the corpus size
    slugs = [e["section"] for e in raw["events"]] + [d["section"] for p in raw["pairs"] for d in p["decisions"]]
    assert all(len(s) == 12 and int(s, 16) >= 0 for s in slugs)  # hashed, never a heading's words


def _git(repo, *args, when=0):
    env = {
        **os.environ,
        "GIT_AUTHOR_DATE": f"@{1700000000 + when} +0000",
        "GIT_COMMITTER_DATE": f"@{1700000000 + when} +0000",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


def test_build_mines_a_local_mirror_into_text_free_records_and_refuses_a_reserved_repository(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    _git(work, "init", "-q", "-b", "main")
    bodies = [
        "# Style\n\n- Use tabs.\n\n## Secret Heading Words\n\n- Keep it short.\n",
        "# Style\n\n- Use tabs.\n\n## Secret Heading Words\n\n- Keep it short.\n- Sign as Sam.\n",
        "# Style\n\n- Use spaces.\n\n## Secret Heading Words\n\n- Keep it short.\n- Sign as Sam.\n",
    ]
    for k, body in enumerate(bodies):
        (work / "CLAUDE.md").write_text(body)
        _git(work, "add", "CLAUDE.md")
        _git(work, "commit", "-q", "-m", f"v{k}", when=k)
    mirrors = tmp_path / "mirrors"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(mirrors / "someone+proj" / "repo")], check=True)
    manifest = tmp_path / "manifest.csv"
    manifest.write_text(
        f"repository,first_commit,commit,paths,licence\nsomeone/proj,x,{_git(work, 'rev-parse', 'HEAD')},default,MIT\n"
    )
    out = tmp_path / "derived.json.gz"
    merged = histories.build(manifest=manifest, out=out, mirrors=mirrors, cache=tmp_path / "cache")
    assert [e["fate"] for e in merged["events"]] == ["kept"] and len(merged["pairs"]) == 2
    assert b"secret-heading-words" not in gzip.decompress(out.read_bytes())
    assert merged["events"][0]["section"] == hashlib.sha256(b"secret-heading-words").hexdigest()[:12]
    reserved = tmp_path / "reserved.csv"
    reserved.write_text("repository,first_commit,commit,paths,licence\nobra/superpowers,x,y,default,MIT\n")
    with pytest.raises(ValueError, match="reserved for independent checks"):
        histories.build(manifest=reserved, out=tmp_path / "no.json.gz", mirrors=mirrors)
    assert not (tmp_path / "no.json.gz").exists()


def test_the_study_runs_on_the_committed_corpus_and_leads_with_its_answer():
    study = histories.run()
    t = study.table()
    assert {"supported", "not supported", "undecided"} & set(t.verdict)
    assert study.finding().startswith("**Answer.**")
    assert len(histories.anchoring_set(study.frames["events"])) == len(study.frames["events"])
