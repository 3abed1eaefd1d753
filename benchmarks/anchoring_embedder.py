"""Would a dense embedder anchor real additions better? A check on the development repositories only.

`anchoring.propose` scores a section with two embedding parts, `body` (the lesson against the section) and
`nearest` (against its closest line), from the bundled static embedder. This script recomputes those two parts with
another embedder (`retrieval.load_embedder` name, e.g. `minilm`), keeps the other parts as the shipped proposal
computes them, and reports top-1 / top-3 on the development split of `benchmarks/anchoring_accuracy.py`'s real
additions: with the shipped weights, the dense parts alone, and a small grid of the two weights. The held-out
repositories are not read. One encode of every distinct text (~43,000 for MiniLM: ~20 min on one busy core).

    .venv/bin/python benchmarks/anchoring_embedder.py [minilm] [--mirrors DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from anchoring_accuracy import extract, real_cases
from mined_cache import split

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from overlay_kit.anchoring import PARTS, WEIGHTS, _lines, _section_text, candidates  # noqa: E402
from overlay_kit.retrieval import load_embedder  # noqa: E402


def main(argv: list[str]) -> None:
    name = next((a for a in argv if not a.startswith("--")), "minilm")
    mirrors = Path(argv[argv.index("--mirrors") + 1]) if "--mirrors" in argv else Path("/work/.mirror")
    dev = {r for r, s in split().items() if s == "dev"}
    events = [r for r in extract(mirrors) if r["repo"] in dev]
    cases = [c for c in real_cases(mirrors)[0] if c["repo"] in dev]
    texts, rows = set(), []
    for r in events:
        cands = candidates(r["sections"])
        if len(cands) < 2 or r["label"] not in [s.slug for s in cands]:
            continue  # as `real_cases` leaves it out
        secs, lines = [_section_text(s) for s in cands], [_lines(s) for s in cands]
        rows.append((r["text"], secs, lines))
        texts |= {r["text"], *secs, *(x for ls in lines for x in ls)}
    if len(rows) != len(cases):
        raise ValueError(f"{len(rows)} events against {len(cases)} cached cases: rebuild anchoring_parts.pkl")
    order = sorted(texts)
    at = {t: i for i, t in enumerate(order)}
    vectors = np.asarray(load_embedder(name).encode(order), dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-12
    grid = {"shipped (static embedder)": None, "shipped weights, dense body and nearest": dict(WEIGHTS)}
    grid |= {
        f"dense, body x{b}, nearest x{n}": dict(WEIGHTS, body=b, nearest=n) for b in (1, 2, 4) for n in (0.5, 1, 2)
    }
    hits = {k: [0, 0] for k in (*grid, "dense body alone", "dense nearest alone")}
    for (text, secs, lines), case in zip(rows, cases):
        q = vectors[at[text]]
        body = np.array([max(vectors[at[s]] @ q, 0.0) for s in secs])
        near = np.array([max((max(vectors[at[x]] @ q, 0.0) for x in ls), default=0.0) for ls in lines])
        parts = {k: np.array([p[k] for p in case["parts"]]) for k in PARTS}
        label = case["slugs"].index(case["label"])
        scores = {"dense body alone": body, "dense nearest alone": near}
        for k, w in grid.items():
            use = parts if w is None else dict(parts, body=body, nearest=near)
            scores[k] = sum((WEIGHTS if w is None else w)[p] * use[p] for p in PARTS)
        for k, score in scores.items():
            ranked = np.argsort(-score, kind="stable")  # ties: the earlier section, as `propose`
            hits[k][0] += ranked[0] == label
            hits[k][1] += label in ranked[:3]
    print(f"{name}: {len(rows)} development additions, {len(order):,} texts encoded")
    for k, (top1, top3) in hits.items():
        print(f"  {k:45s} top-1 {top1 / len(rows):.3f}  top-3 {top3 / len(rows):.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
