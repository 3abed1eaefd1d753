"""Mine the real-histories corpus (`datasets/histories/manifest.csv`) into the text-free derived data notebook 16
reads (`datasets/histories/derived.json.gz`): `overlay_kit.studies.histories.build`.

    python scripts/mine_histories.py [--mirrors DIR] [--cache DIR] [--out FILE]

`--mirrors DIR` (or `$OVERLAY_KIT_MIRRORS`): bare mirrors at `DIR/<owner>+<name>/repo`; a repository not there is
cloned bare into `--cache` (default `~/.cache/overlay_kit/histories`) on first use.
"""

from __future__ import annotations

import argparse
import os
import sys

from overlay_kit.studies import histories


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--manifest")
    ap.add_argument("--mirrors", default=os.environ.get("OVERLAY_KIT_MIRRORS"))
    ap.add_argument("--cache")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    merged = histories.build(manifest=args.manifest, out=args.out, mirrors=args.mirrors, cache=args.cache)
    print(
        f"{len(merged['repos'])} repositories, {len(merged['files'])} files, {len(merged['pairs'])} pairs, "
        f"{len(merged['events'])} rule events"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
