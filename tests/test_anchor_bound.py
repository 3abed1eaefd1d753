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

from overlay_kit import anchor
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
        same(body[rng.randrange(len(body) + 1):])  # a cut anywhere: a line broken in the middle


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

    monkeypatch.setattr(anchor, "_island", no_islands)
    for body in ["Title\n===\nSub\n---\n", "Intro\n\nTwo\n  lines\n===\n", "# A\n   ## B\ntext\n   ### C\n",
                 "Para\n\n\n  # indented after a paragraph\n", "```\nx\n```\nText\n---\n"]:
        anchor.cache_clear()
        assert parse(body) == parse_markdown_it(body), body


@pytest.mark.parametrize("body", ["- a\nText\n===\n", "> a\nText\n===\n", "- a\n  # b\n", "- a\n\n  Text\n  ===\n",
                                  "    code\nText\n===\n", "<div>\nText\n===\n", "[r]: /u\nText\n===\n",
                                  "1. a\n   # b\n", "- a\n\n   ## b\n", "Foo\n    bar\n===\n"])
def test_containers_and_code_still_go_to_markdown_it(body):
    same(body)
    same("# Before\n\nsome text\n\n" + body + "\n# After\n\nmore\n")
