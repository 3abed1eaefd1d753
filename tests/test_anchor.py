"""overlay_kit.anchor: CommonMark sections, lossless rendering, unique slugs, whitespace-blind digests."""

from __future__ import annotations

import random
import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from overlay_kit.anchor import (
    BODY,
    PREAMBLE,
    Anchor,
    Location,
    Section,
    anchor_for,
    digest,
    locate,
    parse,
    render,
    slugify,
    split_lines,
)
from overlay_kit.skill import load_skill, parse_skill

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "datasets" / "skills"
EXAMPLE_NAMES = sorted(p.name for p in EXAMPLES.iterdir() if (p / "SKILL.md").is_file())
PROPERTY = settings(max_examples=500, deadline=None, derandomize=True, database=None)


def slugs(body: str) -> list[str]:
    return [s.slug for s in parse(body)]


def headings(body: str) -> list[tuple[str, int]]:
    return [(s.heading, s.level) for s in parse(body) if s.level]


def oracle(body: str) -> tuple[list[tuple[int, str]], int]:
    """Independent of overlay_kit: (1-based line, inline source) of document-level headings; line count."""
    norm = re.sub(r"\r\n?", "\n", body)
    tokens = MarkdownIt("commonmark").parse(norm)
    heads = [
        (t.map[0] + 1, tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open" and t.level == 0
    ]
    return heads, norm.count("\n") + (0 if norm.endswith("\n") or not norm else 1)


def check_partition(body: str, sections) -> None:
    """Sections tile the body: contiguous line ranges whose text is exactly those lines, each heading
    section starting on the line where CommonMark puts its heading."""
    lines = split_lines(body)
    assert render(sections) == body
    heads, count = oracle(body)
    assert len(lines) == count
    assert [(s.start_line, s.heading_source) for s in sections if s.level] == heads
    expected_start = 1
    for s in sections:
        assert s.start_line == expected_start
        assert s.end_line >= s.start_line - 1
        assert s.text == "".join(lines[s.start_line - 1 : s.end_line])
        expected_start = s.end_line + 1
    assert expected_start == len(lines) + 1


# ------------------------------------------------------------------------------------------ structure


def test_atx_headings_of_every_level_with_optional_closing_hashes():
    body = "# One\n## Two ##\n### Three ###   \n#### Four\n##### Five\n###### Six\n####### Seven\n#NoSpace\n"
    assert headings(body) == [("One", 1), ("Two", 2), ("Three", 3), ("Four", 4), ("Five", 5), ("Six", 6)]
    assert parse(body)[-1].text == "###### Six\n####### Seven\n#NoSpace\n"  # not headings: plain text


def test_setext_headings_including_multi_line_ones():
    body = "Title\n=====\n\nintro\n\nTwo lines\nof heading\n---\n\ntext\n"
    sections = parse(body)
    assert [(s.slug, s.heading, s.level, s.heading_lines) for s in sections] == [
        (PREAMBLE, "", 0, 0),
        ("title", "Title", 1, 2),
        ("two-lines-of-heading", "Two lines of heading", 2, 3),
    ]
    assert sections[2].body_text == "\ntext\n"


def test_a_thematic_break_after_a_blank_line_is_not_a_heading():
    assert slugs("para\n\n---\n\nmore\n") == [BODY]


def test_fenced_code_with_hash_lines_is_not_split():
    body = "# Run\n\n```bash\n# comment\n## another\n```\n\n~~~\n# tilde fence\n~~~\n\n# After\n"
    assert slugs(body) == [PREAMBLE, "run", "after"]


def test_an_unclosed_fence_swallows_the_rest_of_the_body():
    assert slugs("# A\n```\n# not a heading\n") == [PREAMBLE, "a"]


def test_headings_indented_one_to_three_spaces_count_and_four_is_code():
    body = " # One\n  ## Two\n   ### Three\n    # code\n"
    assert headings(body) == [("One", 1), ("Two", 2), ("Three", 3)]
    assert parse(body)[-1].text == "   ### Three\n    # code\n"


def test_headings_inside_block_quotes_and_lists_do_not_start_sections():
    assert slugs("# Top\n\n> # quoted\n\n- # listed\n") == [PREAMBLE, "top"]


def test_preamble_holds_text_before_the_first_heading():
    sections = parse("Intro line.\n\n# First\nbody\n")
    assert (sections[0].slug, sections[0].text, sections[0].start_line, sections[0].end_line) == (
        PREAMBLE,
        "Intro line.\n\n",
        1,
        2,
    )
    assert sections[1].start_line == 3


def test_preamble_is_present_even_when_empty_so_a_leading_blank_line_adds_no_section():
    plain, padded = parse("# A\ntext\n"), parse("\n\n# A\ntext\n")
    assert (plain[0].slug, plain[0].text, plain[0].start_line, plain[0].end_line) == (PREAMBLE, "", 1, 0)
    assert [(s.slug, s.digest) for s in plain] == [(s.slug, s.digest) for s in padded]


def test_a_headingless_body_is_one_whole_body_section():
    body = "Just prose.\n\nTwo paragraphs, no headings.\n"
    (only,) = parse(body)
    assert (only.slug, only.heading, only.level, only.start_line, only.end_line, only.text) == (BODY, "", 0, 1, 3, body)
    (empty,) = parse("")
    assert (empty.slug, empty.text, empty.start_line, empty.end_line) == (BODY, "", 1, 0)


def test_crlf_and_lone_cr_bodies_split_like_lf():
    lf = "Intro\n\n# A\ntext\n\nB\n-\nmore\n"
    for eol in ("\r\n", "\r"):
        other = lf.replace("\n", eol)
        got, want = parse(other), parse(lf)
        assert render(got) == other
        assert [(s.slug, s.start_line, s.end_line, s.digest) for s in got] == [
            (s.slug, s.start_line, s.end_line, s.digest) for s in want
        ]


def test_sections_partition_every_example_losslessly():
    for name in EXAMPLE_NAMES:
        body = load_skill(EXAMPLES / name).body
        check_partition(body, parse(body))


def test_release_notes_example_sections_are_exactly_the_commonmark_ones():
    assert slugs(load_skill(EXAMPLES / "release-notes").body) == [
        PREAMBLE,
        "release-notes",
        "gathering-changes",
        "server",
        "notes",
        "notes-1",
        "client",
        "notes-2",
        "notes-1-1",
        "upgrading",
        "checklist",
        "notes-3",
    ]


def test_failover_runbook_has_201_headed_sections():
    sections = parse(load_skill(EXAMPLES / "failover-runbook").body)
    assert sum(1 for s in sections if s.level) == 201
    assert len({s.slug for s in sections}) == len(sections) == 202


def test_heading_text_is_the_visible_inline_text():
    body = "# Use *the* `tool` [here](http://x) ![alt **y**](i.png) &amp; \\# now\n"
    assert parse(body)[1].heading == "Use the tool here alt y & # now"


# ----------------------------------------------------------------------------------------------- slugs


@pytest.mark.parametrize(
    "heading,slug",
    [
        ("Escalation", "escalation"),
        ("Drafting replies", "drafting-replies"),
        ("A - B", "a-b"),
        ("What's new?", "whats-new"),
        ("  Tabs\tand   spaces ", "tabs-and-spaces"),
        ("snake_case", "snake_case"),
        ("Über Straße", "über-straße"),
        ("!!!", "section"),
        ("", "section"),
        ("Step 12: Drain", "step-12-drain"),
    ],
)
def test_slugify(heading, slug):
    assert slugify(heading) == slug


@pytest.mark.parametrize(
    "heads,expected",
    [
        (["Notes", "Notes", "Notes 1"], ["notes", "notes-1", "notes-1-1"]),
        (["Notes", "Notes", "Notes 2"], ["notes", "notes-1", "notes-2"]),  # GAIA's anchorer collides here
        (["Notes 1", "Notes", "Notes"], ["notes-1", "notes", "notes-2"]),
        (["Notes", "notes", "NOTES!"], ["notes", "notes-1", "notes-2"]),
        (["_preamble", "_body", ""], ["_preamble-1", "_body-1", "section"]),
    ],
)
def test_duplicate_headings_get_unique_slugs(heads, expected):
    assert slugs("".join(f"## {h}\n" for h in heads))[1:] == expected


def test_nfc_and_nfd_headings_share_a_slug():
    nfc = unicodedata.normalize("NFC", "Café crème")
    assert slugify(nfc) == slugify(unicodedata.normalize("NFD", nfc)) == "café-crème"


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_every_example_has_unique_slugs(name):
    found = slugs(load_skill(EXAMPLES / name).body)
    assert len(found) == len(set(found))


# --------------------------------------------------------------------------------------------- digests


BASE = "# Guide\n\n## Escalation\nEscalate a thread when it has waited\nlonger than the window.\n\n## Other\nx\n"


def digests(body: str) -> dict[str, str]:
    return {s.slug: s.digest for s in parse(body)}


@pytest.mark.parametrize(
    "edited",
    [
        BASE.replace("waited\n", "waited   \n"),  # trailing spaces
        BASE.replace("waited\nlonger", "waited longer"),  # re-wrap
        BASE.replace("\n\n", "\n\n\n\n"),  # blank-line runs
        BASE.replace("\n", "\r\n"),  # CRLF
        BASE.replace("## Escalation", "##   Escalation  ##"),  # heading markup spacing
        BASE.replace("## Escalation", "  ## Escalation"),  # indentation 1-3
    ],
)
def test_whitespace_only_edits_keep_every_digest(edited):
    assert digests(edited) == digests(BASE)


@pytest.mark.parametrize(
    "edited",
    [
        BASE.replace("waited", "waited long"),
        BASE.replace("thread", "threads"),
        BASE.replace("longer than the window.", "longer than the window"),
        BASE.replace("## Escalation", "## Escalation!"),  # same slug, changed heading text
    ],
)
def test_word_edits_change_only_that_sections_digest(edited):
    before, after = digests(BASE), digests(edited)
    assert before.keys() == after.keys()
    assert [k for k in before if before[k] != after[k]] == ["escalation"]


def test_a_changed_link_target_in_a_heading_changes_the_digest():
    assert digests("## [Docs](http://a)\n")["docs"] != digests("## [Docs](http://b)\n")["docs"]


def test_nfc_and_nfd_text_share_a_digest():
    text = "Crème brûlée, naïve café"
    assert digest(unicodedata.normalize("NFC", text)) == digest(unicodedata.normalize("NFD", text))
    assert len(digest(text)) == 16 and int(digest(text), 16) >= 0


def test_frontmatter_never_takes_part_in_a_body_anchor():
    body = (EXAMPLES / "triage-inbox" / "SKILL.md").read_text().split("\n---\n", 1)[1]
    one = parse_skill("---\nname: t\ndescription: First.\n---\n" + body)[0]
    two = parse_skill(
        "---\nname: t\ndescription: Second, longer.\nlicense: MIT\nmetadata:\n  gaia:\n"
        "    version: 9.9.9\n    security_tier: verified\n---\n" + body
    )[0]
    assert one.body == two.body == body and one.body_start_line != two.body_start_line
    assert parse(one.body) == parse(two.body)
    for section in parse(one.body):
        assert locate(anchor_for(one.body, section.slug, one.version), two.body).state == "clean"


# ---------------------------------------------------------------------------------------------- locate


def test_anchor_for_records_slug_digest_and_version():
    anchor = anchor_for(BASE, "escalation", "1.2.0")
    assert anchor == Anchor("escalation", parse(BASE)[2].digest, "1.2.0")
    assert Anchor.from_dict(anchor.to_dict()) == anchor
    with pytest.raises(KeyError, match="escalation"):
        anchor_for(BASE, "escalations")


def test_locate_clean_stale_orphaned():
    anchor = anchor_for(BASE, "escalation")
    clean = locate(anchor, BASE.replace("\n", "\r\n"))
    assert (clean.state, clean.section.slug) == ("clean", "escalation")
    stale = locate(anchor, BASE.replace("72", "48").replace("waited", "been waiting"))
    assert (stale.state, stale.section.slug) == ("stale", "escalation")
    orphan = locate(anchor, BASE.replace("## Escalation", "## Follow-ups"))
    assert (orphan.state, orphan.section, orphan.moved_to) == ("orphaned", None, None)
    assert locate(anchor, parse(BASE)) == Location("clean", parse(BASE)[2])


def test_an_orphan_whose_text_survives_under_another_slug_gets_a_hint():
    old = "## Notes\nfirst\n## Notes\nsecond\n"  # notes, notes-1
    anchor = anchor_for(old, "notes-1")
    new = "## Notes\nsecond\n"  # the first block was deleted: the survivor is now `notes`
    found = locate(anchor, new)
    assert (found.state, found.section, found.moved_to) == ("orphaned", None, "notes")
    assert locate(anchor_for(old, "notes"), new).state == "stale"  # `notes` now names other text


def test_a_headingless_body_anchors_whole_body():
    anchor = anchor_for("Just prose.\n", BODY)
    assert locate(anchor, "Just   prose.\n\n").state == "clean"
    assert locate(anchor, "Just more prose.\n").state == "stale"
    assert locate(anchor, "# Now with a heading\nJust prose.\n").state == "orphaned"


def test_section_is_frozen():
    with pytest.raises(AttributeError):
        parse(BASE)[1].slug = "x"  # type: ignore[misc]
    assert isinstance(parse(BASE)[1], Section)


# ------------------------------------------------------------------------------------ property tests

MARKDOWNISH = st.text(alphabet=st.sampled_from(list("#=-`~ \t\r\n>*_[]()!\\&;1aBé字\u0301\u00a0\u2028")), max_size=300)
ANY_TEXT = st.one_of(st.text(max_size=300), MARKDOWNISH)


@PROPERTY
@given(ANY_TEXT)
def test_property_render_parse_is_lossless(body):
    check_partition(body, parse(body))


@PROPERTY
@given(
    st.one_of(
        ANY_TEXT,
        st.lists(
            st.sampled_from(
                [
                    "Notes",
                    "Notes 1",
                    "notes-1",
                    "Notes-1",
                    "Notes 1 1",
                    "_preamble",
                    "_body",
                    "",
                    "!!",
                    "Section",
                    "section-1",
                ]
            ),
            max_size=30,
        ).map(lambda hs: "".join(f"## {h}\n" for h in hs)),
    )
)
def test_property_slugs_are_unique(body):
    found = slugs(body)
    assert len(found) == len(set(found))


# Structured documents whose heading structure no whitespace-only edit can change: words are letters
# only (so a re-wrapped line never starts a list, quote, fence or heading), blocks are separated by at
# least one blank line, and setext underlines follow their heading line directly.
LETTERS = "abcdefghijklmnopqrstuvwxyzéèçñüåøß"
WORD = st.text(alphabet=LETTERS + "ABCÉ", min_size=1, max_size=6)
PARAGRAPH = st.lists(WORD, min_size=1, max_size=12)
SECTION = st.tuples(
    st.integers(1, 6), st.lists(WORD, min_size=1, max_size=4), st.booleans(), st.lists(PARAGRAPH, max_size=2)
)
DOC = st.tuples(st.lists(PARAGRAPH, max_size=2), st.lists(SECTION, max_size=5))


def render_doc(doc, rnd: random.Random | None = None) -> str:
    """Render a generated document; with `rnd`, apply random whitespace-only edits while rendering."""

    def pick(choices, default):
        return rnd.choice(choices) if rnd else default

    def blank_run():
        return "\n" * pick((1, 2, 3), 1)

    def line_end():
        return pick(("", " ", "  ", "\t", " \t "), "") + "\n"

    def paragraph(words):
        width = pick(range(1, 13), len(words))  # re-wrap: a new line every `width` words
        lines = [words[i : i + width] for i in range(0, len(words), width)]
        return " " * pick((0, 1, 2, 3), 0) + "".join(
            pick((" ", "  ", "\t"), " ").join(line) + line_end() for line in lines
        )

    preamble, sections = doc
    parts = [paragraph(p) + blank_run() for p in preamble]
    for level, words, setext, paragraphs in sections:
        title = " ".join(words)
        if setext and level <= 2:
            parts.append(
                title + line_end() + ("=" if level == 1 else "-") * pick((1, 2, 3, 5), 3) + line_end() + blank_run()
            )
        else:
            parts.append(
                " " * pick((0, 1, 2, 3), 0) + "#" * level + " " * pick((1, 2, 3), 1) + title + line_end() + blank_run()
            )
        parts += [paragraph(p) + blank_run() for p in paragraphs]
    return "".join(parts)


@st.composite
def doc_and_whitespace_edit(draw):
    doc = draw(DOC)
    edited = render_doc(doc, random.Random(draw(st.integers(0, 2**32 - 1))))
    if draw(st.booleans()):
        edited = edited.replace("\n", "\r\n")
    edited = unicodedata.normalize(draw(st.sampled_from(["NFC", "NFD"])), edited)
    return render_doc(doc), edited


@PROPERTY
@given(doc_and_whitespace_edit())
def test_property_whitespace_only_edits_keep_every_digest(pair):
    original, edited = pair
    before, after = parse(original), parse(edited)
    assert [(s.slug, s.level, s.digest) for s in before] == [(s.slug, s.level, s.digest) for s in after]


@st.composite
def one_char_edit(draw, word):
    """`word` with one letter replaced, inserted or deleted (never emptied)."""
    i = draw(st.integers(0, len(word)))
    letter = draw(st.sampled_from(LETTERS))
    if i < len(word) and len(word) > 1 and draw(st.booleans()):
        return word[:i] + word[i + 1 :]
    return word[:i] + letter + word[i + 1 :] if i < len(word) and draw(st.booleans()) else word[:i] + letter + word[i:]


@st.composite
def doc_and_word_edit(draw):
    """A document and a copy with one word replaced, inserted or deleted; returns the touched section index."""
    preamble, sections = draw(DOC.filter(lambda d: any(p for p in d[0]) or d[1]))
    slots = [("pre", i) for i in range(len(preamble))]
    slots += [("head", i) for i in range(len(sections))]
    slots += [("body", i, j) for i, s in enumerate(sections) for j in range(len(s[3]))]
    slot = draw(st.sampled_from(slots))
    words = (
        preamble[slot[1]]
        if slot[0] == "pre"
        else sections[slot[1]][1]
        if slot[0] == "head"
        else sections[slot[1]][3][slot[2]]
    )
    k = draw(st.integers(0, len(words) - 1))
    op = draw(st.sampled_from(["replace", "insert", "delete"] if len(words) > 1 else ["replace", "insert"]))
    new_word = draw(
        st.one_of(WORD, one_char_edit(words[k]), st.just(words[k].swapcase())).filter(
            lambda w: unicodedata.normalize("NFC", w) != unicodedata.normalize("NFC", words[k])
        )
    )
    changed = list(words)
    if op == "replace":
        changed[k] = new_word
    elif op == "insert":
        changed.insert(k, new_word)
    else:
        del changed[k]
    new_pre, new_sections = list(preamble), [list(s) for s in sections]
    if slot[0] == "pre":
        new_pre[slot[1]] = changed
        index = 0
    elif slot[0] == "head":
        new_sections[slot[1]][1] = changed
        index = slot[1] + 1
    else:
        new_sections[slot[1]][3] = list(new_sections[slot[1]][3])
        new_sections[slot[1]][3][slot[2]] = changed
        index = slot[1] + 1
    return render_doc((preamble, sections)), render_doc((new_pre, [tuple(s) for s in new_sections])), index


@PROPERTY
@given(doc_and_word_edit())
def test_property_any_word_change_changes_exactly_that_sections_digest(case):
    original, edited, index = case
    before, after = parse(original), parse(edited)
    assert len(before) == len(after)  # structure is fixed by construction
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if a.digest != b.digest]
    assert changed == [index]
