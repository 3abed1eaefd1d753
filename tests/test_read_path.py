"""Issue 42's read path: the shortcuts of a cold compose and of a new process's first resolve, each held to the plain
form it stands for (the line scan's early reject, the rendered pieces counted line by line, the active rows read
through the skill's index)."""

from __future__ import annotations

import random
import re

from overlay_support import TRUSTED, make_skill
from resolve_fixtures import SKILLS, delta

from overlay_kit import anchor, budget, gates, headings, resolve
from overlay_kit.skill import load_skill
from overlay_kit.store import Store

# `headings._SUSPECT` without its negative lookahead: the oracle of the early reject
_SUSPECT_PLAIN = re.compile(headings._SUSPECT.pattern.replace(r"(?!- [^ \t\n<=>\-*+.)0-9#])", "", 1))


def test_the_suspect_scan_rejects_early_exactly_what_it_would_reject_late():
    assert _SUSPECT_PLAIN.pattern != headings._SUSPECT.pattern
    rng = random.Random(42)
    alphabet = " \t-=<>#*+.)019aZ_`~[]:\\\r\x0b\x0c\xa0é" + "-" * 6 + " " * 6
    for _ in range(3000):
        lines = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24))) for _ in range(rng.randint(1, 8))]
        src = "\n" + "\n".join(lines) + "\n"
        got = [(m.span(), m.groupdict()) for m in headings._SUSPECT.finditer(src)]
        want = [(m.span(), m.groupdict()) for m in _SUSPECT_PLAIN.finditer(src)]
        assert got == want, src


def _deltas(skill, rng: random.Random, n: int):
    slugs = [s.slug for s in anchor.parse(skill.body)]
    out = []
    for i in range(n):
        kind = rng.choice(["preference", "example", "parameter", "exception", "tool-hint"])
        payload = {
            "preference": {"body": rng.choice(["keep it short", "  two  spaces\tand a tab", "#1 not a heading"])},
            "example": {"input": "a\nb", "output": "c"},
            "parameter": {"key": f"k{i % 3}", "value": i},
            "exception": {"condition": "the mail is spam", "action": "decline"},
            "tool-hint": {"prefer": list(skill.tools[:1]) or ["search_mail"]},
        }[kind]
        d = delta(skill, kind, payload, rng.choice(slugs), id=f"delta_{i:03d}")
        if rng.random() < 0.3:  # stale: the learned adjustments block
            d = d.evolve(anchor=anchor.Anchor(d.anchor.section, "f" * 16, d.anchor.base_version))
        out.append(d)
    return out


def test_the_rendered_lines_are_the_pieces_cut_after_every_line_break_and_count_exactly():
    """`_Rendered.lines` (what `_tokens` sums) is exactly what `budget.count_following` counted: every inserted
    piece cut after each "\\n"; the sum is the whole text's count."""
    rng = random.Random(7)
    skills = [load_skill(p.parent) for p in sorted(SKILLS.glob("*/SKILL.md"))]
    for trial in range(60):
        skill = rng.choice(skills)
        sections = anchor.parse(skill.body)
        notes: list = []
        picks = resolve._admissible(skill, sections, _deltas(skill, rng, rng.randint(1, 12)), {"user"}, notes)
        picks = resolve._stale_policy(picks, rng.choice(resolve.STALE_POLICIES), notes)
        text_picks = [p for p in picks if p.delta.tier > 1]
        for p in text_picks:
            assert p.line == resolve.item_text(p.delta)
        r = resolve._render(sections, text_picks)
        cut = [line for _, piece in r.pieces for line in budget.following_lines(piece)]
        assert list(r.lines) == cut, (skill.name, trial)
        authored = budget.count_tokens(skill.body)
        assert resolve._tokens(r, authored) == budget.count_tokens(r.text), (skill.name, trial)


def test_a_resolve_reads_only_the_rows_the_budget_order_named():
    """A row the budget order did not name (made active after the order was read) is not read, so not applied."""
    skill = make_skill()
    with Store.open(":memory:", auto_approve=True) as store:
        lessons = [gates.Lesson("preference", {"body": f"Lesson {i}."}, "triage", TRUSTED) for i in range(5)]
        ids = [r.delta.id for r in gates.learn_many(store, skill, lessons)]
        everything = resolve.resolve(skill, store, embedder=False)
        assert [d.id for d in everything.applied] == ids

        class Late:  # the order was read before the last row became active
            def __getattr__(self, name):
                return getattr(store, name)

            def budget_order(self, name, scopes):
                return [row for row in store.budget_order(name, scopes) if row[0] != ids[-1]]

        eff = resolve.resolve(skill, Late(), embedder=False)
        assert [d.id for d in eff.applied] == ids[:-1]
        assert eff.text == resolve.compose(skill, [d for d in everything.applied if d.id != ids[-1]]).text
