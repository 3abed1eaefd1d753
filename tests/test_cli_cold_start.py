"""`overlay-kit resolve` as a whole process does only what resolving needs: learned-line token counts come from
the store (kept per delta, erased with it), the tail check parses Markdown only where a block could stay open,
and the verb imports no module it does not use. (The time is measured by benchmarks/bench_hot.py, not here.)"""

from __future__ import annotations

import json
import os
import random
import re
import sqlite3
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from overlay_support import TRUSTED, make_skill

from overlay_kit import budget, cli, gates, resolve, textguard
from overlay_kit.anchor import Anchor
from overlay_kit.grammar import Delta, Provenance, item_text
from overlay_kit.store import Store

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import fuzz_structure  # noqa: E402
import workload  # noqa: E402

SKILL = make_skill()
# What `resolve` must not import: the embedder stack, fuzzy matching, the rebase module, the tokenizer (counts
# are stored), the Markdown parser (the line scan and the tail shortcut suffice) and the retrieval module.
HEAVY = (
    "numpy",
    "rapidfuzz",
    "faiss",
    "torch",
    "sentence_transformers",
    "wordllama",
    "tokenizers",
    "markdown_it",
    "overlay_kit.rebase",
    "overlay_kit.retrieval",
    "overlay_kit.gates",
    "overlay_kit.injection",
)


def _learn(store, skill, bodies, section="replies"):
    results = gates.learn_many(
        store, skill, [gates.Lesson("preference", {"body": b}, section, TRUSTED) for b in bodies]
    )
    assert all(r.delta for r in results), [r.message for r in results]
    return [r.delta for r in results]


def _forget_process_counts():
    budget._FOLLOWING.clear()
    budget.count_following.cache_clear()
    budget.scaffold_tokens.cache_clear()
    resolve._AUTHORED.clear()


def test_learned_line_counts_are_kept_per_delta_and_erased_with_it(tmp_path, monkeypatch):
    with Store.open(tmp_path / "o.db", auto_approve=True) as s:
        deltas = _learn(
            s, SKILL, ["Reply in two short sentences.", "Sign off with the team name.", "Quote the `ticket id` first."]
        )
        want = resolve.resolve(SKILL, s, embedder=False)
        assert len(want.applied) == 3 and want.tokens == budget.count_tokens(want.text)
        kept = dict(s.conn.execute("SELECT key, value FROM overlay_meta WHERE key LIKE 'line_tokens:delta_%'"))
        assert {f"line_tokens:{d.id}" for d in deltas} == set(kept)
        for d in deltas:
            assert int(kept[f"line_tokens:{d.id}"].split()[0]) == budget.count_following(item_text(d))
    _forget_process_counts()  # a fresh process, in effect: every count must come from the database
    monkeypatch.setattr(budget, "count_many", lambda texts: pytest.fail(f"counted again: {texts}"))
    with Store.open(tmp_path / "o.db") as s:
        got = resolve.resolve(SKILL, s, embedder=False)
        assert (got.text, got.tokens, got.notes) == (want.text, want.tokens, want.notes)
        s.forget(skill="mail")
        assert s.conn.execute("SELECT count(*) FROM overlay_meta WHERE key LIKE 'line_tokens:delta_%'").fetchone() == (
            0,
        )


def test_a_line_whose_rendering_changed_is_counted_again(tmp_path):
    with Store.open(tmp_path / "o.db") as s:
        assert s.line_tokens({"delta_x": "- one\n"}) == {"delta_x": budget.count_following("- one\n")}
        assert s.line_tokens({"delta_x": "- one two three four\n"}) == {
            "delta_x": budget.count_following("- one two three four\n")
        }
        assert budget.count_following("- one\n") != budget.count_following("- one two three four\n")


def test_line_counts_do_not_wait_for_a_locked_database(tmp_path):
    with Store.open(tmp_path / "o.db") as s:
        other = sqlite3.connect(tmp_path / "o.db", isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another writer holds the lock (the store would wait 30 s)
        try:
            assert s.line_tokens({"k": "- a line\n"}) == {"k": budget.count_following("- a line\n")}
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert not s.conn.in_transaction
        assert s.conn.execute("SELECT count(*) FROM overlay_meta WHERE key = 'line_tokens:k'").fetchone() == (0,)
        s.line_tokens({"k": "- a line\n"})  # unlocked now: remembered
        assert s.conn.execute("SELECT count(*) FROM overlay_meta WHERE key = 'line_tokens:k'").fetchone() == (1,)


def test_the_tail_shortcut_decides_as_the_block_parse_does(monkeypatch):
    """Where the tail holds no fence or HTML-block opener the resolver skips the markdown-it tail check; the
    same mutated skills and hostile deltas composed with the check forced on every tail give the same result.
    (The fuzz's authored lines, mostly without the openers so that the shortcut is taken often.)"""
    plain = [line for line in fuzz_structure.AUTHORED_LINES if not resolve._MAY_SWALLOW.search(line)]
    monkeypatch.setattr(fuzz_structure, "AUTHORED_LINES", plain + ["```", "~~~python", "<pre>", "<!-- open"])
    parsed = []
    block_parse = resolve._top_blocks
    monkeypatch.setattr(resolve, "_top_blocks", lambda text: parsed.append(text) or block_parse(text))
    rng = random.Random(14)
    skills = fuzz_structure._skills()
    shortcut = fallbacks = 0
    for k in range(300):
        base = rng.choice(skills)
        skill = base.__class__(**{**base.__dict__, "body": fuzz_structure.mutate(rng, base.body)})
        sections = resolve._sections(skill.body)
        bodies = fuzz_structure.HOSTILE_BODIES
        deltas = [
            Delta(
                skill=skill.name,
                kind="preference",
                payload={"body": rng.choice(bodies)},
                anchor=Anchor(s.slug, "0" * 16 if rng.random() < 0.3 else s.digest, skill.version),
                provenance=Provenance("user_instruction"),
                status="active",
                id=f"delta_{k}_{i}",
                base_root=skill.root,
                created_at=datetime(2026, 1, 1, 0, i, tzinfo=timezone.utc),
            )
            for i, s in enumerate(rng.choice(sections) for _ in range(rng.randint(1, 6)))
        ]
        parsed.clear()
        fast = resolve.compose(skill, deltas, embedder=False)
        shortcut += bool(fast.applied) and not parsed
        with monkeypatch.context() as m:
            m.setattr(resolve, "_MAY_SWALLOW", re.compile(""))  # every tail block-parsed
            full = resolve.compose(skill, deltas, embedder=False)
        assert (fast.text, fast.notes) == (full.text, full.notes), (skill.body[-200:], deltas)
        fallbacks += bool(full.notes_of("render_failed"))
    assert shortcut > 50 and fallbacks > 0  # both sides were exercised


def _store_with_learned_lines(tmp_path) -> tuple[Path, Path]:
    """The bench's small skill (inline code in its last section) with 90 active lessons."""
    from overlay_kit.skill import load_skill

    d = tmp_path / "skills" / "small"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(
        workload.skill_text("small", workload.skill_body(workload.SIZES["small"])), encoding="utf-8"
    )
    skill = load_skill(d)
    slugs = [s.slug for s in resolve._sections(skill.body) if s.level]
    db = tmp_path / "o.db"
    with Store.open(db, auto_approve=True) as s:
        rows = gates.learn_many(
            s,
            skill,
            [
                gates.Lesson("preference", {"body": x["body"], "trigger": x["trigger"]}, x["section"], TRUSTED)
                for x in workload.lessons(slugs, 90)
            ],
        )
        assert sum(r.outcome == "active" for r in rows) == 90
    return d, db


def _run(*argv: str) -> tuple[list[str], str, str]:
    """(heavy modules loaded, stdout, stderr) of `cli.main(argv)` in a fresh interpreter."""
    code = (
        "import sys; from overlay_kit.cli import main; code = main(sys.argv[1:]); "
        f"print('LOADED', sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr); sys.exit(code)"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=REPO, env=env, check=True
    )
    err, _, loaded = out.stderr.rpartition("LOADED ")
    return eval(loaded), out.stdout, err  # noqa: S307 - our own printed list


def test_resolve_with_90_learned_lines_loads_no_heavy_module(tmp_path):
    """The first resolve counts the learned lines once and keeps the counts; from then on the verb runs
    without the tokenizer, markdown-it, numpy, rapidfuzz, the retrieval or rebase modules, and prints the
    same bytes."""
    skill_dir, db = _store_with_learned_lines(tmp_path)
    argv = ("resolve", str(skill_dir), "--db", str(db))
    first_loaded, first_out, first_err = _run(*argv)
    assert "tokenizers" in first_loaded  # the control: counting did load it
    loaded, out, err = _run(*argv)
    assert loaded == []
    assert (out, err) == (first_out, first_err) and out.count("- Lesson ") == 90
    loaded, out_json, _ = _run(*argv, "--json")
    assert loaded == [] and '"applied"' in out_json


def test_learning_from_a_file_loads_no_embedder_stack(tmp_path):
    """`learn --from` runs the gates and the store: not numpy (promotion's interval is imported where it is
    used), the embedders, fuzzy matching, the retrieval or rebase modules."""
    skill_dir, db = tmp_path / "mail", tmp_path / "o.db"
    skill_dir.mkdir()
    (skill_dir / "SKILL.md").write_text(
        "---\nname: mail\ndescription: Mail.\n---\n# Mail\n\n## Replies\n\nShort.\n", encoding="utf-8"
    )
    lessons = tmp_path / "lessons.jsonl"
    lessons.write_text(
        "".join(
            json.dumps(
                {
                    "kind": "preference",
                    "payload": {"body": f"Keep reply {i} short."},
                    "section": "replies",
                    "provenance": TRUSTED,
                }
            )
            + "\n"
            for i in range(3)
        ),
        encoding="utf-8",
    )
    loaded, out, _ = _run("learn", str(skill_dir), "--from", str(lessons), "--db", str(db))
    assert "3 lessons: 3 staged" in out
    assert not set(loaded) & {
        "numpy",
        "rapidfuzz",
        "faiss",
        "torch",
        "sentence_transformers",
        "wordllama",
        "overlay_kit.rebase",
        "overlay_kit.retrieval",
    }, loaded


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60) | st.text(max_size=30), st.booleans())
def test_visible_shortcut_equals_the_per_character_pass(text, keep_newlines):
    shown = "".join(
        f"<U+{ord(c):04X}>" if textguard.is_hidden(c) or (not keep_newlines and c == "\n") else c for c in text
    )
    assert textguard.visible(text, keep_newlines=keep_newlines) == shown


def test_old_module_paths_still_import_with_a_deprecation_warning():
    code = (
        "import warnings, sys; warnings.simplefilter('error'); import overlay_kit; "
        "print('importlib.abc' in sys.modules); warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    import overlay_kit.sim as old\n"
        "    from overlay_kit import knowledge\n"
        "import overlay_kit.studies.sim as new, overlay_kit.surfaces.knowledge as k\n"
        "print(old is new, knowledge is k, [str(x.message) for x in w if x.category is DeprecationWarning])"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.splitlines() == [
        "False",
        "True True ['overlay_kit.sim moved to overlay_kit.studies.sim; the old path goes in the next "
        "release', 'overlay_kit.knowledge moved to overlay_kit.surfaces.knowledge; the old path goes in the next "
        "release']",
    ]


def _subparser(parser, verb):
    return next(a for a in parser._actions if a.dest == "command").choices[verb]


@pytest.mark.parametrize("verb", [cli._verb(r) for r in cli.REGISTRARS])
def test_a_verb_parses_alone_as_in_the_full_parser(verb, capsys):
    """main() builds only the invoked verb's subparser: its help, usage errors and parsed arguments are the full
    parser's."""
    full, alone = cli.build_parser(), cli.build_parser(verb)
    assert list(next(a for a in alone._actions if a.dest == "command").choices) == [verb]
    assert _subparser(alone, verb).format_help() == _subparser(full, verb).format_help()
    assert alone.format_usage() == full.format_usage()
    for argv in ([verb], [verb, "x", "--no-such-flag"], [verb, "--json", "--db", "d.db", "x"]):
        outcomes = []
        for parser in (full, alone):
            try:
                outcomes.append({k: repr(v) for k, v in vars(parser.parse_args(argv)).items()})
            except SystemExit as exc:
                outcomes.append((exc.code, capsys.readouterr().err))
        assert outcomes[0] == outcomes[1], argv


def test_the_first_resolve_after_an_approval_loads_no_tokenizer(tmp_path):
    """The verb that makes a lesson active keeps its line's count (the budget has just counted it)."""
    from overlay_kit.resources import dataset_path

    skill_dir, db = str(dataset_path("skills", "triage-inbox")), str(tmp_path / "o.db")
    _run(
        "learn",
        skill_dir,
        "--kind",
        "preference",
        "--section",
        "triage-inbox",
        "--source",
        "user_instruction",
        "--body",
        "Reply in two short sentences.",
        "--db",
        db,
    )
    with Store.open(db) as s:
        (staged,) = s.search("triage-inbox", status="staged")
        assert s.conn.execute(
            "SELECT count(*) FROM overlay_meta WHERE key = ?", (f"line_tokens:{staged.id}",)
        ).fetchone() == (0,)  # not active: nothing to keep yet
    _run("approve", staged.id, "--db", db)
    loaded, out, err = _run("resolve", skill_dir, "--db", db)
    assert loaded == [] and "- Reply in two short sentences." in out and f"applied {staged.id}" in err
