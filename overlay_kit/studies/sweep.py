"""The one sweep runner every study uses: a function over a parameter grid, in parallel, with progress.

`sweep(fn, grid)` is `[fn(**params) for params in grid]` run by joblib (loky processes by default, or any
joblib backend: "threading", "sequential"), or by dask (`backend="dask"`): on the `client` given, else on a
LocalCluster bound to 127.0.0.1 for the sweep's duration. A tqdm.auto bar shows progress (off with
`progress=False`). Results come back in grid order whatever the backend.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import joblib
from tqdm.auto import tqdm

__all__ = ["sweep"]


def _dask(n_jobs: int, client=None) -> contextlib.ExitStack:
    """joblib's dask backend on the given client, or on a LocalCluster bound to 127.0.0.1."""
    from dask.distributed import (  # optional extra `dask`: imported only when asked for
        Client,
        LocalCluster,
    )

    stack = contextlib.ExitStack()
    if client is None:
        cluster = stack.enter_context(
            LocalCluster(
                n_workers=max(1, n_jobs), threads_per_worker=1, host="127.0.0.1", dashboard_address=None, processes=True
            )
        )
        client = stack.enter_context(Client(cluster))
    stack.enter_context(joblib.parallel_config(backend="dask"))
    return stack


def sweep(
    fn: Callable[..., Any],
    grid: Sequence[Mapping[str, Any]],
    *,
    backend: str = "loky",
    n_jobs: int = 2,
    progress: bool = True,
    client=None,
    desc: str = "sweep",
) -> list[Any]:
    """`[fn(**params) for params in grid]`, in parallel with a tqdm.auto progress bar.

    backend: any joblib backend ("loky", "threading", "sequential") or "dask", which runs the same sweep on
    a dask.distributed cluster — `client` if given, else a LocalCluster on 127.0.0.1 for the duration.
    """
    grid = list(grid)
    # One BLAS/OpenMP/torch thread per loky worker: n_jobs workers already fill the cores, and nested threads
    # contend (the embedding policy's encoder runs ~10x slower on a busy 2-core machine without this; its
    # vectors are bit-identical either way).
    inner = {"inner_max_num_threads": 1} if backend == "loky" else {}
    context = (
        (lambda: _dask(n_jobs, client))
        if backend == "dask"
        else (lambda: joblib.parallel_config(backend=backend, n_jobs=n_jobs, **inner))
    )
    with context(), warnings.catch_warnings():
        # loky recycles idle workers on a busy machine and says so; results are unaffected
        warnings.filterwarnings("ignore", "A worker stopped while some jobs", UserWarning)
        tasks = (joblib.delayed(fn)(**params) for params in grid)
        results = joblib.Parallel(n_jobs=n_jobs, return_as="generator")(tasks)
        return list(tqdm(results, total=len(grid), desc=desc, disable=not progress))
