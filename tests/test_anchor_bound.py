"""Issue 18's bound, for correctness: small instances of every adversarial shape of
benchmarks/bench_anchor_bound.py (which times them at the 2 MiB limit) anchor exactly as the markdown-it
oracle does, and the mixed parse (line scan + markdown-it islands) is what decides them."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_anchor_bound

from overlay_kit import anchor, headings
from overlay_kit.anchor import parse, parse_markdown_it, render


def same(body: str) -> None:
    anchor.cache_clear()
    fast, oracle = parse(body), parse_markdown_it(body)
    assert fast == oracle, body[:2000]
    assert [s.digest for s in fast] == [s.digest for s in oracle], body[:2000]
    assert render(fast) == body


@pytest.mark.parametrize("shape", sorted(bench_anchor_bound.SHAPES))
def test_small_adversarial_bodies_match_the_oracle(shape):
    make = bench_anchor_bound.SHAPES[shape]
    rng = random.Random(shape)
    for seed in range(60):
        size = rng.choice([60, 200, 700, 3000])
        body = make(size, seed)
        same(body)
        same(body.replace("\n", "\r\n"))
        same(body[rng.randrange(len(body) + 1) :])  # a cut anywhere: a line broken in the middle


def test_a_list_nested_ten_deep_swallows_the_rest_as_markdown_it_does():
    """markdown-it stops at nesting level 20 and the top-level list takes the rest of the document; the
    line scan must not report the heading after it (it did before the `deep` check)."""
    for k in (9, 10, 14):
        body = "- " * k + "x\n\n# Heading\n"
        same(body)
        assert [s.slug for s in parse(body)] == (["_preamble", "heading"] if k < 10 else ["_body"])
    same("".join("  " * d + "- x\n" for d in range(12)) + "\n# After\n")


def test_setext_and_indented_headings_are_decided_without_markdown_it(monkeypatch):
    """Setext headings and headings indented 1-3 spaces in a document-level context need no island."""

    def no_islands(*a, **k):
        raise AssertionError("markdown-it was called")

    monkeypatch.setattr(headings, "_island", no_islands)
    for body in [
        "Title\n===\nSub\n---\n",
        "Intro\n\nTwo\n  lines\n===\n",
        "# A\n   ## B\ntext\n   ### C\n",
        "Para\n\n\n  # indented after a paragraph\n",
        "```\nx\n```\nText\n---\n",
    ]:
        anchor.cache_clear()
        assert parse(body) == parse_markdown_it(body), body


@pytest.mark.parametrize(
    "body",
    [
        "- a\nText\n===\n",
        "> a\nText\n===\n",
        "- a\n  # b\n",
        "- a\n\n  Text\n  ===\n",
        "    code\nText\n===\n",
        "<div>\nText\n===\n",
        "[r]: /u\nText\n===\n",
        "1. a\n   # b\n",
        "- a\n\n   ## b\n",
        "Foo\n    bar\n===\n",
    ],
)
def test_containers_and_code_still_go_to_markdown_it(body):
    same(body)
    same("# Before\n\nsome text\n\n" + body + "\n# After\n\nmore\n")


# ------------------------------------------------------------------------------------------ the input bounds


def _no_parse(monkeypatch):
    """Any scan, mixed parse or island after this fails the test: a refusal must come before them."""

    def boom(*a, **k):
        raise AssertionError("the body was parsed before the bound refused it")

    for name in ("scan_lines", "scan_mixed", "_island"):
        monkeypatch.setattr(headings, name, boom)
    monkeypatch.setattr(anchor, "_parse", boom)


@pytest.mark.parametrize("line", ["#\n", "## Notes\n", "   # a\n", "Title\n===\n", "---\n", "#\r"])
def test_a_body_over_the_section_bound_is_refused_before_parsing(monkeypatch, line):
    anchor.cache_clear()
    n = anchor.MAX_SECTIONS + 1
    body = line * n
    _no_parse(monkeypatch)
    with pytest.raises(
        anchor.AnchorError,
        match=f"^{n} heading-like lines .* limit of {anchor.MAX_SECTIONS} sections; refused before parsing",
    ) as exc:
        parse(body)
    assert isinstance(exc.value, ValueError) and exc.value.line is None


def test_a_body_at_the_section_bound_anchors_as_the_oracle_does():
    anchor.cache_clear()
    body = "".join(f"## Step {i}\ntext\n" for i in range(anchor.MAX_SECTIONS))
    assert len(parse(body)) == anchor.MAX_SECTIONS + 1
    same(body)
    # heading-like lines in code count too (the bound is counted before anything is parsed)
    fenced = "```\n" + "# comment\n" * anchor.MAX_SECTIONS + "```\n# Real\n"
    with pytest.raises(anchor.AnchorError, match="heading-like"):
        parse(fenced)


def test_markdown_it_work_past_the_island_budget_is_refused(monkeypatch):
    """Lines only markdown-it can decide are paid for from ISLAND_WORK; past it, `AnchorError` naming
    the line where the island that could not be paid for starts. Below it, the oracle's result."""
    unit = "- a\n\n   ## b\n\n"  # inside the item or not? markdown-it decides, on an island each
    monkeypatch.setattr(headings, "ISLAND_WORK", 300)
    anchor.cache_clear()
    small = "# Top\n\n" + unit * 20
    same(small)
    anchor.cache_clear()
    with pytest.raises(anchor.AnchorError, match="more than 300 units of block parsing") as exc:
        parse("# Top\n\n" + unit * 200)
    assert exc.value.line is not None and 3 <= exc.value.line <= 2 + 3 * 200
    assert exc.value.message in str(exc.value) and str(exc.value).startswith(f"line {exc.value.line}: ")


def test_only_definitions_a_heading_may_use_get_islands(monkeypatch):
    """In the definitions pass, a definition of a label no heading holds, or of one already defined,
    changes no heading text: no island for it. The result is still the oracle's."""
    calls = []
    island = headings._island
    monkeypatch.setattr(headings, "_island", lambda scan, start, line: calls.append(line) or island(scan, start, line))
    body = (
        "# See [used]\n\n"
        + "".join(f"[unused{i}]: /u{i}\n\n" for i in range(50))
        + "[used]: /first\n\n"
        + "[USED]: /second\n\n" * 20
        + "## [Used] again\n"
    )
    same(body)
    assert len(calls) == 1  # the first definition of `used` only
    assert [s.heading for s in parse(body)] == ["", "See used", "Used again"]


def _skill_file(tmp_path, body: str):
    file = tmp_path / "bomb" / "SKILL.md"
    file.parent.mkdir(parents=True)
    file.write_text("---\nname: bomb\ndescription: An input bomb.\n---\n" + body)
    return file


def test_load_skill_names_the_file_of_a_body_over_a_bound(tmp_path, monkeypatch):
    from overlay_kit.skill import SkillFormatError, load_skill, read_unvalidated

    anchor.cache_clear()
    file = _skill_file(tmp_path, "## Notes\n" * (anchor.MAX_SECTIONS + 1))
    for load in (load_skill, read_unvalidated):
        with pytest.raises(
            SkillFormatError, match=f"body cannot be anchored: {anchor.MAX_SECTIONS + 1} heading-like"
        ) as exc:
            load(file)
        assert exc.value.path == str(file)
    monkeypatch.setattr(headings, "ISLAND_WORK", 40)
    anchor.cache_clear()
    file = _skill_file(tmp_path / "islands", "# Top\n\n" + "- a\n\n   ## b\n\n" * 40)
    with pytest.raises(SkillFormatError, match="too much for markdown-it") as exc:
        load_skill(file)
    lines = file.read_text().splitlines()
    assert exc.value.line is not None and lines[exc.value.line - 1] in ("- a", "# Top")  # file line, not body line


def test_the_cli_prints_one_line_for_a_body_over_a_bound(tmp_path, capsys):
    from overlay_kit.cli import main

    anchor.cache_clear()
    file = _skill_file(tmp_path, "#\n" * (anchor.MAX_SECTIONS + 5))
    assert main(["anchors", str(file)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(file) in err and f"{anchor.MAX_SECTIONS + 5} heading-like lines" in err


def test_an_effective_text_over_the_section_bound_falls_back_to_the_authored_base():
    """A loaded body may sit at the limit; the learned-adjustments heading then takes the effective text
    over it. `compose` never raises: the authored base, with a note naming the refusal."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from resolve_fixtures import delta, make_skill

    from overlay_kit.resolve import compose

    anchor.cache_clear()
    body = "# Title\n\n" + "".join(f"## Step {i}\n" for i in range(anchor.MAX_SECTIONS - 1))
    skill = make_skill(body=body)
    assert len(parse(body)) == anchor.MAX_SECTIONS + 1
    stale = delta(skill, "preference", {"body": "a lesson"}, "step-7").evolve(
        anchor=anchor.Anchor("step-7", "0" * 16, "1.0")
    )
    eff = compose(skill, [stale], ceiling=10**6)  # (the body alone is ~39,000 tokens)
    assert eff.text == skill.body and "AnchorError" in eff.notes_of("error")[0].detail


@pytest.mark.parametrize(
    "source",
    [
        "[alpha] beta",
        "*em* and **strong** `code` ![alt *x*](i.png)",
        "a &amp; &#35; \\*b\\*",
        "[link](/u 'title') <http://x.y> <b>html</b>",
        "[ALPHA][] and [Beta  Gamma]",
        "line\nbreak  \nhard",
        "\ufffd nul and tab\tx",
        "[a [b] c](/x) [unclosed",
        "*a" * 50,
    ],
)
def test_heading_text_is_what_parse_inline_gives(source):
    """`_inline_plain` runs the inline rules alone; the whole `parseInline` chain gives the same text."""
    env = {"references": {"ALPHA": {"title": "", "href": "/a"}, "BETA GAMMA": {"title": "t", "href": "/b"}}}
    for e in (None, env):
        whole = anchor._markdown().parseInline(source, {} if e is None else dict(e))[0].children
        assert anchor._inline_plain.__wrapped__(source, e) == " ".join(anchor._plain(whole).split())
