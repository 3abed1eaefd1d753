"""Issue 18's bound: every body up to the 2 MiB limit anchors in < 1 s or is refused (`AnchorError`) in < 1 s.
An adversarial corpus of the shapes that are slow for a Markdown parser or for the anchorer, each at full size;
prints each shape's time, or "refused (AnchorError)" and the time the refusal took, and the maximum (the
issue's figure).

    python benchmarks/bench_anchor_bound.py [--size MIB] [--runs N] [--shape NAME ...]

"Anchors" = `anchor.parse` (sections, slugs, line spans) plus every section's digest, uncached; the last two
columns time `anchor.parse` alone. CPU time of this process is printed beside wall time (the machine is shared). The same generator feeds
tests/test_anchor_bound.py, which checks small instances of every shape against the markdown-it oracle.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from overlay_kit import anchor

MIB = 1 << 20
WORDS = ["alpha", "beta", "gamma", "delta", "notes", "setup", "steps", "usage", "example"]


def _word(rng: random.Random) -> str:
    return rng.choice(WORDS)


def _text(rng: random.Random) -> str:
    return " ".join(_word(rng) for _ in range(rng.randint(1, 6)))


def _deep_list(rng):
    depth = rng.randint(0, 24)
    pad = "  " * depth
    return rng.choice(
        [
            f"{pad}- {_text(rng)}\n",
            f"{pad}- # {_text(rng)}\n",
            f"{pad}  {_text(rng)}\n",
            f"{pad}1. {_text(rng)}\n",
            "\n",
            f"# {_text(rng)}\n",
            f"{pad}  ===\n",
            f"{pad}---\n",
        ]
    )


def _deep_inline(rng):
    return rng.choice(
        [
            ("- " * rng.randint(1, 14)) + _text(rng) + "\n",
            "\n",
            f"# {_text(rng)}\n",
            ("> " * rng.randint(1, 30)) + _text(rng) + "\n",
            ("1. " * rng.randint(5, 12)) + "x\n",
        ]
    )


def _setext(rng):
    return rng.choice(
        [
            f"{_text(rng)}\n===\n",
            f"{_text(rng)}\n---\n",
            "\n",
            f"{_text(rng)}\n{_text(rng)}\n===\n",
            f"  {_text(rng)}\n  ---\n",
            "===\n",
            "- - -\n",
            f"{_text(rng)}\n    {_text(rng)}\n-----\n",
        ]
    )


def _containers(rng):
    return rng.choice(
        [
            f"- # {_text(rng)}\n",
            f"> # {_text(rng)}\n",
            f"  # {_text(rng)}\n",
            f"   ## {_text(rng)}\n",
            f"> {_text(rng)}\n",
            f"{_text(rng)}\n",
            "\n",
            f"- {_text(rng)}\n  # {_text(rng)}\n",
            f"> {_text(rng)}\n===\n",
            f"- {_text(rng)}\n---\n",
            f"1. # {_text(rng)}\n",
            f"# {_text(rng)}\n",
        ]
    )


def _html(rng):
    return rng.choice(
        [
            "<div>\n",
            "</div>\n",
            f"# {_text(rng)}\n",
            "\n",
            "<!--\n",
            "-->\n",
            "<pre>\n",
            "</pre>\n",
            f"<x-{_word(rng)}>\n",
            f"{_text(rng)}\n",
            "<?php\n",
            "?>\n",
            "  <p>\n",
        ]
    )


def _fences(rng):
    return rng.choice(
        [
            "```\n",
            "~~~~\n",
            "  ```\n",
            f"# {_text(rng)}\n",
            f"{_text(rng)}\n",
            "\n",
            "- ```\n",
            "> ```\n",
            "``` `x`\n",
            "````python\n",
            "   ~~~\n",
        ]
    )


def _refs(rng):
    w = _word(rng)
    return rng.choice(
        [
            f"[{w}]: /u/{w}\n",
            f"# [{w}] {_text(rng)}\n",
            f"{_text(rng)}\n",
            "\n",
            f"> [{w}]: /q\n",
            f"- [{w}]: /l\n",
            f"[{w}]:\n/x\n",
        ]
    )


def _mixture(rng):
    return rng.choice([_deep_list, _deep_inline, _setext, _containers, _html, _fences, _refs])(rng)


def _units(unit: Callable[[random.Random], str]) -> Callable[[int, int], str]:
    def make(size: int, seed: int = 0) -> str:
        rng, out, n = random.Random(seed), [], 0
        while n < size:
            piece = unit(rng)
            out.append(piece)
            n += len(piece)
        return "".join(out)[:size]

    return make


def _repeat(text: str) -> Callable[[int, int], str]:
    return lambda size, seed=0: (text * (size // len(text) + 1))[:size]


def _counted(template: str, size: int) -> str:
    """`template` filled with 1, 2, 3, … up to `size` bytes: many tiny sections, no two alike."""
    out, n, i = [], 0, 0
    while n < size:
        i += 1
        piece = template.format(i)
        out.append(piece)
        n += len(piece)
    return "".join(out)[:size]


SHAPES: dict[str, Callable[[int, int], str]] = {
    "deep-lists": _units(_deep_list),
    "deep-inline-lists": _units(_deep_inline),
    "setext-heavy": _units(_setext),
    "setext-tight": _repeat("Title\n===\nSub\n---\n"),
    "hash-in-containers": _units(_containers),
    "html-blocks": _units(_html),
    "fences": _units(_fences),
    "link-references": _units(_refs),
    "mixture": _units(_mixture),
    "duplicate-headings": _repeat("## Notes\n"),
    "empty-headings": _repeat("#\n"),
    "one-letter-headings": _repeat("# a\n"),
    "headings-with-text": _repeat("## Notes\n\nSome text here.\n\n"),
    "indented-headings": _repeat("   ## Step\ntext\n"),
    "numbered-headings": lambda size, seed=0: _counted("# Step {}\n", size),
    "numbered-setext": lambda size, seed=0: _counted("Step {}\n---\n", size),
    "one-huge-heading": lambda size, seed=0: "# " + ("word " * size)[: size - 3] + "\n",
    "long-lines": _repeat("x" * 65535 + "\n"),
    "unclosed-fence": lambda size, seed=0: "```\n" + _repeat("# not a heading\n\n")(size - 4),
    "unclosed-comment": lambda size, seed=0: "<!--\n" + _repeat("# hidden\n\ntext\n\n")(size - 5),
    # one undecided line, then a block markdown-it must take whole: the island budget, not the section bound
    "island-of-items": lambda size, seed=0: "- a\n\n   ## b\n" + _repeat("- word\n")(size - 13),
    "island-of-nested-items": lambda size, seed=0: "- a\n\n   ## b\n" + _repeat("- - - - - x\n")(size - 13),
    "island-of-text": lambda size, seed=0: "- a\n\n   ## b\n" + _repeat("word word\n")(size - 13),
}


def anchors(body: str) -> int:
    anchor.cache_clear()
    return len([s.digest for s in anchor.parse(body)])


def sections(body: str) -> int:
    anchor.cache_clear()
    return len(anchor.parse(body))


def at_limit(body: str) -> str:
    """The longest prefix of `body` (whole lines) that the section bound lets through: its first
    `anchor.MAX_SECTIONS` heading-like lines. The worst body of a shape that must anchor, not be refused."""
    src = "\n" + body.replace("\r\n", "\n").replace("\r", "\n") + "\n"
    for k, m in enumerate(anchor._HEADING_LIKE.finditer(src)):
        if k == anchor.MAX_SECTIONS:
            return body[: m.start()]  # (offsets agree: the shapes use "\n" line breaks only)
    return body


def run(name: str, body: str, runs: int) -> tuple[float, float, str]:
    """Time one body; print its row; (wall, cpu, outcome)."""
    try:
        n = str(anchors(body))
    except anchor.AnchorError as exc:
        n = "refused"
        why = "sections" if "heading-like" in exc.message else "islands"
    wall, cpu = measure(anchors, body, runs)
    pwall, pcpu = measure(sections, body, runs)
    line = f"{name:<28}{len(body.encode()):>10}{n:>10}{wall:>9.3f}{cpu:>9.3f}{pwall:>9.3f}{pcpu:>9.3f}"
    if n == "refused":
        line += f"   refused (AnchorError, {why}) in {wall:.3f} s"
    print(line, flush=True)
    return wall, cpu, n


def measure(fn: Callable[[str], int], body: str, runs: int) -> tuple[float, float]:
    """(median wall s, median CPU s) of `fn(body)`, a refusal (`AnchorError`) included."""
    wall, cpu = [], []
    for _ in range(runs):
        c, t = time.process_time(), time.perf_counter()
        try:
            fn(body)
        except anchor.AnchorError:
            pass
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=float, default=2.0, help="body size in MiB (default 2, the limit)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--shape", nargs="*", default=list(SHAPES))
    args = ap.parse_args()
    size = int(args.size * MIB)
    worst = (0.0, 0.0, "")
    print(f"{'shape':<28}{'bytes':>10}{'sections':>10}{'wall s':>9}{'cpu s':>9}   parse alone: wall, cpu")
    refused = rows = 0
    for name in args.shape:
        body = SHAPES[name](size)
        bodies = [(name, body)]
        cut = at_limit(body)
        if cut != body:  # the same shape cut to the section bound: the worst body that is not refused by it
            bodies.append((name + " @limit", cut))
        for label, b in bodies:
            wall, cpu, n = run(label, b, args.runs)
            worst = max(worst, (wall, cpu, label))
            refused += n == "refused"
            rows += 1
    print(
        f"max over the corpus: {worst[0]:.3f} s wall, {worst[1]:.3f} s CPU ({worst[2]}), anchored or refused; "
        f"{refused} of {rows} bodies refused; target < 1 s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
