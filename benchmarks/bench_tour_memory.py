"""Peak memory of the tour's kernels: does Binder (1–2 GB) hold `00_quickstart` and `01_overlay_tour`?

    .venv/bin/python benchmarks/bench_tour_memory.py [NOTEBOOK ...]

Each notebook is executed in a fresh kernel (nbclient, from its own directory, as in JupyterLab) with one cell
appended that reads the kernel's own peak resident set size (`ru_maxrss`); the JupyterLab server itself is not
counted. Prints one line per notebook: wall seconds and the kernel's peak RSS in MiB.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
PROBE = "import resource; print('PEAK_RSS_KIB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"


def peak(path: Path) -> tuple[float, float]:
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    t0 = time.perf_counter()
    NotebookClient(nb, timeout=600, resources={"metadata": {"path": str(path.parent)}}).execute()
    wall = time.perf_counter() - t0
    out = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    kib = int(out.split("PEAK_RSS_KIB")[1].split()[0])
    return wall, kib / 1024


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("notebooks", nargs="*", default=["notebooks/00_quickstart.ipynb", "notebooks/01_overlay_tour.ipynb"])
    args = p.parse_args(argv)
    for nb in args.notebooks:
        wall, mib = peak(ROOT / nb)
        print(f"{nb}: {wall:.1f} s wall, kernel peak RSS {mib:.0f} MiB")
    print(
        f"(this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB; Python {sys.version.split()[0]})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
