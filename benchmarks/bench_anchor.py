"""Time loading, sectioning and anchoring a 9-section and a 201-section skill; print medians.

    .venv/bin/python benchmarks/bench_anchor.py [--repeat N]

Stages: `load_skill` (read + frontmatter + validation), `parse` (markdown-it sections of the body),
`anchors` (parse + every section's digest: what `overlay-kit anchors` computes), and `cli --json`
(the whole `overlay-kit anchors PATH --json` command, in-process, output discarded).

Then what the hand-written heading scanner (`overlay_kit.headings`) buys over markdown-it-py: `parse`
uncached (the line scan, or the mixed scan with markdown-it islands) against `parse_markdown_it`
(markdown-it alone, the oracle), same sections, on both skills and on a fuzz-mutated runbook
(benchmarks/fuzz_structure.py's authored lines) that takes the mixed scan.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import statistics
from pathlib import Path

import fuzz_structure  # noqa: E402  (benchmarks/fuzz_structure.py)
from timing import timed  # noqa: E402  (benchmarks/timing.py)

from overlay_kit import anchor, headings
from overlay_kit.anchor import parse
from overlay_kit.cli import main as cli_main
from overlay_kit.skill import load_skill

SKILLS = Path(__file__).resolve().parents[1] / "datasets" / "skills"
CASES = ("triage-inbox", "failover-runbook")


def anchors(path: Path) -> list[str]:
    return [s.digest for s in parse(load_skill(path).body)]


def cli(path: Path) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli_main(["anchors", str(path), "--json"]) == 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=60)
    args = ap.parse_args()
    print(f"{'skill':<18} {'headed':>6} {'bytes':>6}  {'stage':<12} {'median':>10} {'p10':>10} {'p90':>10}")
    for name in CASES:
        path = SKILLS / name
        skill = load_skill(path)
        headed = sum(1 for s in parse(skill.body) if s.level)
        size = (path / "SKILL.md").stat().st_size
        stages = {
            "load_skill": lambda: load_skill(path),
            "parse": lambda: parse(skill.body),
            "load+parse": lambda: parse(load_skill(path).body),
            "anchors": lambda: anchors(path),
            "cli --json": lambda: cli(path),
        }
        for stage, fn in stages.items():
            runs = sorted(timed(fn, args.repeat))
            q = statistics.quantiles(runs, n=10)
            print(
                f"{name:<18} {headed:>6} {size:>6}  {stage:<12} {statistics.median(runs) * 1e3:>8.3f}ms"
                f" {q[0] * 1e3:>8.3f}ms {q[-1] * 1e3:>8.3f}ms"
            )
    print(f"(median of {args.repeat} runs after one warm-up; p10/p90 show the spread on a shared machine)")
    scanner_vs_markdown_it(args.repeat)


def _mixed_case() -> str:
    """The runbook with authored lines CommonMark reads in surprising ways: the first seed whose body the
    line scan gives up on (so `parse` takes the mixed scan)."""
    body = load_skill(SKILLS / "failover-runbook").body
    for seed in range(100):
        mutated = fuzz_structure.mutate(random.Random(seed), body)
        if headings.scan_lines(mutated) is None:
            return mutated
    raise AssertionError("no mutated runbook takes the mixed scan")


def scanner_vs_markdown_it(repeat: int) -> None:
    cases = [(name, load_skill(SKILLS / name).body) for name in CASES]
    cases.append(("runbook, mutated", _mixed_case()))
    uncached = anchor._parse_cached.__wrapped__  # `parse` without its cache: bound check + heading scan + sections
    print(f"\n{'body':<18} {'path':<10} {'scanner':>10} {'markdown-it':>12} {'ratio':>7}")
    for name, body in cases:
        assert uncached(body) == anchor.parse_markdown_it(body)
        path = "line scan" if headings.scan_lines(body) is not None else "mixed"
        fast = statistics.median(timed(lambda: uncached(body), repeat))
        slow = statistics.median(timed(lambda: anchor.parse_markdown_it(body), repeat))
        print(f"{name:<18} {path:<10} {fast * 1e3:>8.3f}ms {slow * 1e3:>10.3f}ms {slow / fast:>6.1f}x")
    print("(sections only, no digests; median of each, same process; ratio: markdown-it time / scanner time)")


if __name__ == "__main__":
    main()
