"""The anchorer's line scan against its oracle (the markdown-it parse), the parse cache, and input bombs.

Equality is checked on everything a section carries: slug, heading, level, line span, text, heading
lines, inline source and digest.
"""

from __future__ import annotations

import random
import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overlay_kit import anchor, headings
from overlay_kit.anchor import parse, parse_markdown_it, render, slugify
from overlay_kit.skill import parse_skill

REPO = Path(__file__).resolve().parents[1]
SKILL_FILES = sorted(
    [
        *REPO.glob("datasets/skills/*/SKILL.md"),
        *REPO.glob("datasets/lessons/skills/*/SKILL.md"),
        *REPO.glob("tests/fixtures/**/*.md"),
    ]
)

# Lines that can hide, fake or move a heading, mixed with plain ones (blank lines weighted up).
TRICKY = [
    "# Title",
    "## Notes",
    "### Setup ###",
    "## Trailing #",
    "#",
    "# ",
    "#NoSpace",
    "####### seven",
    "## Notes",
    "  # indented two",
    "   ### indented three",
    "    # four is code",
    "\t# tab is code",
    " \t## space tab",
    "Plain paragraph text.",
    "More text with `code` and *emphasis*",
    "Tom & Jerry _under_ [x](http://y)",
    "# Heading with [a link](http://example.com) and `code`",
    "## Émoji ñ café",
    "## Cafe\u0301 nfd",
    "# Tom &amp; Jerry \\# escaped \\*",
    "## ![alt *text*](img.png) image",
    "# <b>html</b> inline",
    "===",
    "---",
    "  ---",
    "- - -",
    "***",
    "-",
    "=",
    "    ---",
    "--",
    "== x",
    "- item",
    "- # heading in a list item",
    "1. step",
    "   ```",
    "  ```bash",
    "- ```",
    "1. ```",
    "```",
    "```python",
    "~~~",
    "````",
    "``` `not a fence`",
    "    ```",
    "~~~~ info `ok`",
    "\t```",
    "> quote",
    "> # heading in a quote",
    "> ```",
    ">",
    "> - # deep",
    "<div>",
    "</div>",
    "<!-- comment",
    "-->",
    "<pre>",
    "</pre>",
    "<custom-tag>",
    "  <p>",
    "<x",
    "a <b>",
    "[ref]: http://example.com",
    "# [ref]",
    "[ref]",
    "\t- tab item",
    "  - nested",
    "    - nested more",
    "",
    "",
    "",
    "",
    "",
    "",
    # issue 18's adversarial shapes: setext paragraphs, lazy and indented lines, HTML kinds 1-7, deep lists
    "  Text",
    "   Text",
    "    indented",
    "Text",
    "*em* start",
    "#tag",
    "-->",
    "<!-- c -->",
    "<b>x</b> y",
    "<x-y>",
    "<script>",
    "</script>",
    "<?x",
    "?>",
    "<!X",
    "<![CDATA[",
    "]]>",
    "- - -",
    "___",
    "_x_",
    "+ p",
    "+",
    "-",
    "2) e",
    "\t- t",
    "- " * 10 + "x",
    "  " * 9 + "- nine deep",
    "      # six",
    " # H",
    "  ===",
    "====",
]
PLAIN = [
    "# Title",
    "## Notes",
    "### Step",
    "Some text.",
    "- item",
    "1. step",
    "```bash",
    "```",
    "# in fence?",
    "",
    "",
    "",
    "Use `x`.",
    "## Notes",
    "    code",
    "~~~",
    "* star item",
    "Text *em* **strong**",
]


def assert_same(body: str) -> bool:
    """The fast path equals the oracle on `body`; True when the line scan decided it (no fallback)."""
    anchor.cache_clear()
    fast = parse(body)
    oracle = parse_markdown_it(body)
    assert fast == oracle, body
    assert [s.digest for s in fast] == [s.digest for s in oracle], body
    assert render(fast) == body
    return headings.scan_lines(body) is not None


def generated(rng: random.Random, pool: list[str]) -> str:
    lines = [rng.choice(pool) for _ in range(rng.randint(0, 24))]
    end = rng.choice(["\n", "\n", "\n", "\r\n", "\r"])
    body = end.join(lines) + rng.choice([end, ""])
    if rng.random() < 0.02:
        body = body.replace("Title", "Ti\0tle")
    return body


def test_5000_generated_bodies_match_the_markdown_it_oracle():
    rng = random.Random(14)
    decided = fallback = 0
    for i in range(5000):
        body = generated(rng, TRICKY if i % 2 else PLAIN)
        if assert_same(body):
            decided += 1
        else:
            fallback += 1
    # Both paths are exercised: the scan decides the plain mixes, the tricky ones mostly fall back.
    assert decided >= 2000 and fallback >= 1000, (decided, fallback)


@settings(max_examples=1000, deadline=None, derandomize=True, database=None)
@given(st.lists(st.sampled_from(TRICKY + PLAIN), max_size=30), st.sampled_from(["\n", "\r\n", "\r"]), st.booleans())
def test_property_fast_path_equals_oracle(lines, end, final):
    assert_same(end.join(lines) + (end if final else ""))


@settings(max_examples=500, deadline=None, derandomize=True, database=None)
@given(st.text(alphabet=st.sampled_from(list("#`~-=<> \t\n\r*_[]!&\\x1.") + ["é", "\u00a0", "\u2028"]), max_size=80))
def test_property_fast_path_equals_oracle_on_symbol_soup(body):
    assert_same(body)


@pytest.mark.parametrize("path", SKILL_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_example_skill_and_fixture_matches_the_oracle(path):
    text = path.read_bytes().decode("utf-8", errors="replace")
    assert_same(text)
    try:
        skill, _ = parse_skill(text, path)
    except Exception:  # bad fixtures: the raw text above is the case
        skill = None
    if skill is not None:
        assert_same(skill.body)


def test_the_example_skills_take_the_line_scan():
    """The fast path is the common case: most example bodies never reach markdown-it."""
    bodies = [parse_skill(p.read_text(), p)[0].body for p in SKILL_FILES if "datasets" in p.parts]
    assert sum(headings.scan_lines(b) is not None for b in bodies) >= len(bodies) - 2


def test_constructs_that_need_container_state_fall_back():
    for body in ["Para\n---\n", "- a\n  # b\n", "  ```\n# x\n", "<div>\n# x\n", "[r]: /u\n# [r]\n", "Para\n===\n"]:
        assert headings.scan_lines(body) is None, body
        assert_same(body)


def test_trim_set_is_markdown_its():
    from markdown_it.common.utils import MD_TRIM_CHARS

    assert set(headings._TRIM) == set(MD_TRIM_CHARS)


def test_parse_results_are_cached_by_body():
    body = "# A\n\ntext\n\n## B\n"
    anchor.cache_clear()
    first = parse(body)
    assert parse("".join(["# A\n\ntext\n", "\n## B\n"])) is first  # an equal body, another string object
    assert parse(body, fast=False) == first and parse(body, fast=False) is not first


# ------------------------------------------------------------------------------------------ input bombs


def _old_slugify(heading: str) -> str:
    """The former regex slugify (quadratic on long hyphen runs): the reference for its output."""
    text = " ".join(unicodedata.normalize("NFC", heading).lower().split())
    text = re.sub(r"[^\w\- ]", "", text)
    text = re.sub(r"[\s-]*\s[\s-]*|-{2,}", "-", text).strip("-")
    return text or "section"


@settings(max_examples=2000, deadline=None, derandomize=True, database=None)
@given(
    st.text(alphabet=st.sampled_from(list("aZ9_ -\t\n\x0b\x1c!#.,é\u0301ñ\u00a0\u2028Ωßİ\u212b") + ["ﬁ"]), max_size=16)
)
def test_property_slugify_equals_the_former_regex_slugify(heading):
    assert slugify.__wrapped__(heading) == _old_slugify(heading)


def _old_unique(slugs: list[str]) -> list[str]:
    taken, out = {anchor.PREAMBLE, anchor.BODY}, []
    for slug in slugs:
        candidate, n = slug, 0
        while candidate in taken:
            n += 1
            candidate = f"{slug}-{n}"
        taken.add(candidate)
        out.append(candidate)
    return out


def test_8000_identical_headings_number_one_to_7999():
    sections = parse("## Notes\n\nbody\n\n" * 8000)
    assert [s.slug for s in sections[1:]] == ["notes"] + [f"notes-{i}" for i in range(1, 8000)]


def test_duplicate_numbering_skips_slugs_other_headings_took():
    heads = ["Notes 1", "Notes", "Notes", "Notes", "Notes 3", "Notes", "Notes-2", "Notes 2"] * 5
    body = "".join(f"## {h}\n" for h in heads)
    assert [s.slug for s in parse(body)[1:]] == _old_unique([slugify(h) for h in heads])


def test_a_1_mb_heading_anchors_whole():
    words = "word " * 200_000
    for heading in (words, "a" + "-" * 1_000_000 + "b", "[" * 1_000_000, "*a" * 500_000):
        sections = parse(f"# {heading}\n\nbody\n")
        assert len(sections) == 2 and sections[1].heading_source == heading.strip()
        assert render(sections) == f"# {heading}\n\nbody\n"
    assert parse(f"# {words}\n")[1].slug == "-".join(["word"] * 200_000)
    assert parse("# a" + "-" * 1_000_000 + "b\n")[1].slug == "a-b"


def test_long_heading_text_is_its_first_inline_limit_characters():
    """Past INLINE_LIMIT characters the heading's plain text stops; its digest still sees every word."""
    long = "*x* " * anchor.INLINE_LIMIT
    a, b = parse(f"# {long}\n")[1], parse(f"# {long}tail\n")[1]
    assert a.heading == " ".join(["x"] * (anchor.INLINE_LIMIT // 4))
    assert a.heading == b.heading and a.digest != b.digest


@pytest.mark.parametrize("name", ["hash-lines", "fences", "quotes", "lists", "long-line", "brackets"])
def test_bomb_shaped_bodies_parse_losslessly(name):
    """Correctness only (256 KB here); benchmarks/bench_anchor.py times these shapes at the 2 MiB limit."""
    size = 256 * 1024 - 64
    unit = {
        "hash-lines": "## Notes\n",
        "fences": "```\n# x\n```\n",
        "quotes": "> " * 500 + "x\n",
        "lists": "- x\n  - y\n",
        "long-line": "x" * 4096,
        "brackets": "[" * 99 + "\n",
    }[name]
    body = (unit * (size // len(unit) + 1))[:size]
    if body.count("#") > anchor.MAX_SECTIONS:  # heading-like lines past the section bound: refused, typed
        with pytest.raises(anchor.AnchorError, match="heading-like lines"):
            parse(body)
        body = body[: len(unit) * anchor.MAX_SECTIONS]
    sections = parse(body)
    assert render(sections) == body


@settings(max_examples=1500, deadline=None, derandomize=True, database=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "notes",
                "notes-1",
                "notes-2",
                "notes-1-1",
                "a",
                "a-1",
                "a-01",
                "b",
                "_preamble",
                "_body",
                "_body-1",
                "section",
                "section-3",
            ]
        ),
        max_size=30,
    )
)
def test_property_duplicate_numbering_equals_the_sequential_search(slugs):
    """`_numbered`'s shortcut (the k-th repeat is `slug-k`) gives what the first-free search gives."""
    assert anchor._numbered(list(slugs)) == _old_unique(slugs)
