"""The heading scanner (overlay_kit/headings.py) against its oracle, markdown-it alone
(`headings.markdown_it_headings`, what `anchor.parse_markdown_it` uses).

`anchor.parse` runs the mixed scan only where the line scan gives up; here the mixed scan runs on *every*
body, so each of its rules meets the plain bodies too, and the line scan is checked wherever it decides.
Equality is on the sections `anchor` builds from the headings (slug, heading text with link definitions
resolved, level, line span, text, heading lines, inline source, digest), over the existing corpora: the
generated bodies of tests/test_anchor_fast.py, the adversarial shapes of benchmarks/bench_anchor_bound.py,
every example skill and fixture, and the mutated skills of benchmarks/fuzz_structure.py.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_anchor_bound
import fuzz_structure
from test_anchor_fast import PLAIN, SKILL_FILES, TRICKY, generated

from overlay_kit import anchor, headings


def same(body: str) -> None:
    """Both scanners give the oracle's sections on `body` (the line scan where it decides)."""
    oracle = anchor.parse_markdown_it(body)
    mixed = anchor._parse(body, headings.scan_mixed(body))
    assert mixed == oracle, body[:2000]
    assert [s.digest for s in mixed] == [s.digest for s in oracle], body[:2000]
    fast = headings.scan_lines(body)
    if fast is not None:
        assert anchor._parse(body, fast) == oracle, body[:2000]


def test_generated_bodies_match_the_oracle():
    rng = random.Random(41)
    for i in range(2000):
        same(generated(rng, TRICKY if i % 2 else PLAIN))


@pytest.mark.parametrize("shape", sorted(bench_anchor_bound.SHAPES))
def test_adversarial_shapes_match_the_oracle(shape):
    make = bench_anchor_bound.SHAPES[shape]
    rng = random.Random(shape)
    for seed in range(15):
        body = make(rng.choice([60, 200, 700, 3000]), seed)
        same(body)
        same(body.replace("\n", "\r\n"))
        same(body[rng.randrange(len(body) + 1) :])


@pytest.mark.parametrize("path", SKILL_FILES, ids=lambda p: str(p.relative_to(Path(__file__).resolve().parents[1])))
def test_every_example_skill_and_fixture_matches_the_oracle(path):
    same(path.read_bytes().decode("utf-8", errors="replace"))


def test_the_structure_fuzz_skills_match_the_oracle():
    rng = random.Random(18)
    bases = [s.body for s in fuzz_structure._skills()]
    hostile = fuzz_structure.HOSTILE_BODIES
    for _ in range(300):
        body = fuzz_structure.mutate(rng, rng.choice(bases))
        same(body)
        lines = body.split("\n")
        lines.insert(rng.randint(0, len(lines)), rng.choice(hostile))  # a learned body pasted in as authored text
        same("\n".join(lines))


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(
    st.text(
        alphabet=st.sampled_from(list("#`~-=<> \t\n\r*_[]!&\\x1.:") + ["é", "\u00a0", "\u2028", "\0"]), max_size=100
    )
)
def test_property_symbol_soup_matches_the_oracle(body):
    same(body)


@pytest.mark.parametrize(
    "body, lines",
    [
        ("Title\n===\nSub\n---\n", [0, 2]),  # setext underlines end document-level paragraphs
        ("Text\n\n---\n", []),  # under a blank line: a thematic break
        ("# A\n---\n", [0]),  # under a heading: a thematic break
        ("> quote\nlazy\n---\n", []),  # lazy text in a quote: the `---` is a break, not an underline
        ("   ## Three\n", [0]),  # indented 1-3: a heading where no list item holds it
        ("- item\n\n   ## nested\n", []),  # inside the item: not document-level
        ("```\n# code\n```\n# After\n", [3]),  # a fence hides what it holds
        ("<!--\n# hidden\n-->\n# Shown\n", [3]),  # so does an HTML block
        ("# See [a]\n\n[a]: /u\n", [0]),  # a definition a heading uses: the second pass
    ],
)
def test_each_rule_on_a_small_body(body, lines):
    """A readable example per rule; the oracle agrees."""
    assert headings.scan_mixed(body).starts == lines
    assert headings.markdown_it_headings(body).starts == lines
    same(body)
