#!/usr/bin/env python3
"""Expand datasets/lessons/source.yaml into the lesson corpus datasets/lessons/lessons.csv.

Deterministic: each template's draws are seeded by (seed, template id, draw index), so editing one template
changes only its own rows. The source is checked first (every namespace, key, section, tool and slot must
resolve; tier 0 iff a shipped tool reads the namespace). Usage:

    python scripts/make_lessons_corpus.py                 # rewrite datasets/lessons/lessons.csv
    python scripts/make_lessons_corpus.py --out /tmp/x    # write elsewhere (the test regenerates and diffs)
"""

from __future__ import annotations

import argparse
from pathlib import Path

from overlay_kit.studies import lessons


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=lessons.DEFAULT_SOURCE)
    ap.add_argument("--out", type=Path, default=lessons.DEFAULT_CORPUS, help="CSV to write")
    args = ap.parse_args()
    corpus = lessons.build_corpus(lessons.load_source(args.source))
    print(f"{lessons.write_corpus(corpus, args.out)}: {len(corpus)} lessons")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
