"""The hot paths do no repeated work, and do it the same: stored token counts, payloads checked once, the
CLI's lazy imports. (Timings are measured by benchmarks/bench_hot.py, not here.)"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from overlay_support import TRUSTED, make_skill

from overlay_kit import budget, gates, grammar, resolve
from overlay_kit.store import Store

REPO = Path(__file__).resolve().parents[1]
SKILL = make_skill()


def test_authored_tokens_are_kept_by_body_digest(tmp_path, monkeypatch):
    with Store.open(tmp_path / "o.db") as s:
        assert s.authored_tokens(SKILL.body) == budget.count_tokens(SKILL.body)
        key = f"authored_tokens:{SKILL.body_digest}"
        assert s.conn.execute("SELECT value FROM overlay_meta WHERE key = ?", (key,)).fetchone() == (
            str(budget.count_tokens(SKILL.body)),
        )
    monkeypatch.setattr(budget, "count_tokens", lambda text: pytest.fail("counted again"))
    with Store.open(tmp_path / "o.db") as s:  # another process, in effect: the count comes from the database
        assert s.authored_tokens(SKILL.body) == int(
            s.conn.execute("SELECT value FROM overlay_meta WHERE key = ?", (key,)).fetchone()[0]
        )


def test_authored_tokens_do_not_wait_for_a_locked_database(tmp_path):
    with Store.open(tmp_path / "o.db") as s:
        other = sqlite3.connect(tmp_path / "o.db", isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another writer holds the lock (the store would wait 30 s)
        try:
            assert s.authored_tokens(SKILL.body) == budget.count_tokens(SKILL.body)
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert s.conn.execute("SELECT count(*) FROM overlay_meta WHERE key LIKE 'authored_tokens:%'").fetchone() == (0,)
        s.authored_tokens(SKILL.body)  # unlocked now: remembered
        assert s.conn.execute("SELECT count(*) FROM overlay_meta WHERE key LIKE 'authored_tokens:%'").fetchone() == (1,)


def test_rows_the_store_read_are_not_shape_checked_again(tmp_path, monkeypatch):
    with Store.open(tmp_path / "o.db", auto_approve=True) as s:
        gates.learn_many(
            s, SKILL, [gates.Lesson("preference", {"body": f"Lesson {i}."}, "replies", TRUSTED) for i in range(3)]
        )
        s.search("mail")  # first read: each canonical payload checked once for this process
        want = resolve.resolve(SKILL, s, embedder=False)
        monkeypatch.setattr(grammar, "check_shape", lambda *a: pytest.fail("shape-checked again"))
        got = resolve.resolve(SKILL, s, embedder=False)
    assert got.text == want.text and len(got.applied) == 3


def test_a_hand_edited_row_is_still_refused_at_read(tmp_path):
    with Store.open(tmp_path / "o.db", auto_approve=True) as s:
        (r,) = gates.learn_many(s, SKILL, [gates.Lesson("preference", {"body": "Short."}, "replies", TRUSTED)])
        assert len(s.search("mail")) == 1
        s.conn.execute("UPDATE skill_deltas SET payload = ? WHERE id = ?", (json.dumps({"text": "x"}), r.delta.id))
        assert s.search("mail") == []  # unreadable rows are skipped, as before


def test_token_counts_of_learned_lines_are_batched_and_cached(monkeypatch):
    pieces = ["- a lesson\n", "- another one\n", "- a lesson\n"]
    want = [budget.count_tokens("\n" + p) - 2 for p in pieces]
    assert budget.count_many_following(pieces) == want
    monkeypatch.setattr(budget, "count_many", lambda texts: pytest.fail("counted again"))
    assert budget.count_many_following(pieces) == want and budget.count_following(pieces[1]) == want[1]


HEAVY = ("numpy", "rapidfuzz", "overlay_kit.rebase", "tokenizers", "markdown_it")


def loaded_by(*argv: str, env: dict | None = None) -> set[str]:
    code = (
        "import sys; from overlay_kit.cli import main; code = main(sys.argv[1:]); "
        f"print({HEAVY!r} and sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr); "
        "sys.exit(code)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=REPO, env=env, check=True
    )
    return set(eval(out.stderr.strip().splitlines()[-1]))  # noqa: S307 - our own printed list


def test_resolve_without_learned_lines_loads_no_heavy_module(tmp_path):
    """A skill whose body count is in the store resolves without numpy, rapidfuzz, the rebase module, the
    tokenizer or markdown-it (the example's headings take the line scan)."""
    import os

    from overlay_kit.resources import dataset_path
    from overlay_kit.skill import load_skill

    db, skill_dir = tmp_path / "o.db", dataset_path("skills", "triage-inbox")
    with Store.open(db) as s:
        s.authored_tokens(load_skill(skill_dir).body)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    assert loaded_by("resolve", str(skill_dir), "--db", str(db), env=env) == set()
    assert loaded_by("resolve", str(skill_dir), "--no-learned-skills", env=env) == {"tokenizers"}
