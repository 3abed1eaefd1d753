"""Instructions per learned row (valgrind), for comparing two versions of the write path on a noisy machine.

    python benchmarks/learn_instructions.py [ROWS]          # this tree
    cd OTHER_CHECKOUT && python /path/to/learn_instructions.py   # another tree, the same workload

Wall and CPU time on a shared 2-core VM move by a third from minute to minute; the instruction count of the same
work moves by under 1%. The script runs itself under `valgrind --tool=callgrind` twice: once learning three
batches of ROWS fresh lessons (`workload.lessons`, new seeds each batch, into new stores), once learning only the
first (which warms the pattern automaton and the caches), with everything else the same; the difference over
2 x ROWS is the count per row. Needs valgrind on PATH (not a project dependency: prints why and exits 0 without).
Instructions are not time (a cache miss costs no instruction), so `bench_hot.py` stays the measure of record.
Nor are they the same instructions: valgrind offers no SHA extensions, so the seal's HMAC-SHA-256 counts as
OpenSSL's software fallback (28 instructions a byte under valgrind, 2.5x faster than BLAKE2b natively).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def learn(rows: int, batches: int) -> None:
    """Learn `batches` of the three batches of fresh lessons (all three are generated either way)."""
    sys.path[:0] = [str(Path.cwd() / "benchmarks"), str(Path.cwd())]  # the tree run from, not this file's
    import workload

    from overlay_kit import anchor, gates
    from overlay_kit.skill import parse_skill
    from overlay_kit.store import Store

    skill, _ = parse_skill(workload.skill_text("large", workload.skill_body(workload.SIZES["large"])), None)
    slugs = [s.slug for s in anchor.parse(skill.body) if s.level]
    tmp = Path(tempfile.mkdtemp())
    for k in range(3):
        lessons = [
            gates.Lesson("preference", {"body": x["body"], "trigger": x["trigger"]}, x["section"], "user_instruction")
            for x in workload.lessons(slugs, rows, seed=workload.LEARN_SEED + k)
        ]
        if k < batches:
            with Store.open(tmp / f"{k}.db") as store:
                assert all(r.outcome == "staged" for r in gates.learn_many(store, skill, lessons))
    shutil.rmtree(tmp)


def instructions(rows: int, batches: int) -> int:
    cmd = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--learn",
        str(rows),
        str(batches),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=dict(os.environ, PYTHONHASHSEED="0"))
    return int(re.search(r"Collected : (\d+)", out.stderr).group(1))


def main() -> None:
    if sys.argv[1:2] == ["--learn"]:
        learn(int(sys.argv[2]), int(sys.argv[3]))
        return
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    if shutil.which("valgrind") is None:
        print("learn_instructions: valgrind is not on PATH; nothing measured")
        return
    per_row = (instructions(rows, 3) - instructions(rows, 1)) / (2 * rows)
    print(
        f"learn_instructions: {Path.cwd().name}: {per_row:,.0f} instructions per learned row "
        f"({rows:,}-row batches of fresh lessons, the first batch not counted)"
    )


if __name__ == "__main__":
    main()
