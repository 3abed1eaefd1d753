"""The same answer on every CPU: the cosine every decision reads is exact (held to an integer oracle), and the
scores, embeddings and rebase decisions come out bit for bit the same under different OpenBLAS kernels, while
the plain float32 product they replace does not (so the kernels really differed), and with numpy's own loops held
to its baseline instruction set (an AVX-512 machine then runs what one without AVX2 runs)."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from overlay_kit.common import cosines


def exact_cosines(a, b):
    """The oracle: the same grid, integer dot products in Python's unbounded ints, the same final float ops."""
    a, b = np.atleast_2d(np.asarray(a, np.float64)), np.atleast_2d(np.asarray(b, np.float64))
    bits = (52 - max(a.shape[1], 1).bit_length()) // 2

    def grid(m):
        out = []
        for row in m:
            peak = float(np.abs(row).max()) if row.size else 0.0
            out.append([int(x) for x in np.rint(row * (2.0**bits / (peak if peak > 0 else 1.0)))])
        return out

    qa, qb = grid(a), grid(b)
    na = [math.sqrt(float(sum(x * x for x in r))) for r in qa]
    nb = [math.sqrt(float(sum(x * x for x in r))) for r in qb]
    return np.array(
        [
            [
                float(sum(x * y for x, y in zip(r, s))) / (na[i] * nb[j]) if na[i] * nb[j] > 0 else 0.0
                for j, s in enumerate(qb)
            ]
            for i, r in enumerate(qa)
        ]
    ).reshape(len(qa), len(qb))


finite = st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False, width=32)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 700).flatmap(
        lambda d: st.tuples(arrays(np.float32, (3, d), elements=finite), arrays(np.float32, (2, d), elements=finite))
    )
)
def test_cosines_equal_the_integer_oracle_bit_for_bit(pair):
    a, b = pair
    assert cosines(a, b).tobytes() == exact_cosines(a, b).tobytes()


def test_cosines_are_cosines_and_refuse_mismatched_dimensions():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 384)), rng.standard_normal((5, 384))
    plain = (a / np.linalg.norm(a, axis=1, keepdims=True)) @ (b / np.linalg.norm(b, axis=1, keepdims=True)).T
    assert np.abs(cosines(a, b) - plain).max() < 1e-5
    assert cosines(np.zeros(8), np.ones(8)).tolist() == [[0.0]]
    with pytest.raises(ValueError, match="384- and 256-dimensional"):
        cosines(a, np.ones((1, 256)))


PROBE = r"""
import hashlib, json, sys
import numpy as np
from numpy._core import _multiarray_umath as umath
from overlay_kit import rebase
from overlay_kit.anchor import parse
from overlay_kit.common import cosines
from overlay_kit.retrieval import TriggerIndex, static_embedder
from overlay_kit.studies import sim

rng = np.random.default_rng(7)
x = rng.standard_normal((96, 256)).astype(np.float32)
h = lambda a: hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()
texts = [sim.make_skill(__import__("random").Random(k))[:300] for k in range(40)]
vectors = static_embedder().encode(texts)
index = TriggerIndex(None, [f"{k:03d}" for k in range(40)], vectors)
plans = []
for seed in range(3):
    bodies = sim.generate_history("adversarial", 12, 0, seed=seed).bodies
    for k in range(len(bodies) - 1):
        plan = rebase.plan_update(rebase.Update(parse(bodies[k]), parse(bodies[k + 1])), rebase.EmbeddingPolicy())
        plans.append([[d.state, d.proposal and (d.proposal.section, d.proposal.score)] for d in plan.decisions])  # full precision
print(json.dumps({"numpy": [t for t in umath.__cpu_dispatch__ if umath.__cpu_features__.get(t)], "raw": h(x @ x.T), "cosines": h(cosines(x, x)), "embeddings": h(vectors),
                  "search": [[(hit.delta_id, hit.cosine) for hit in index.search(v, 0.2)] for v in vectors[:8]],
                  "plans": hashlib.sha256(json.dumps(plans).encode()).hexdigest()}))
"""


def _probe(**env) -> dict:
    """PROBE's output in a fresh interpreter under these environment variables (None: unset)."""
    env = {k: v for k, v in {**os.environ, "OPENBLAS_NUM_THREADS": "1", **env}.items() if v is not None}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _decided(run: dict) -> dict:
    """What a run decided: all but the plain float32 product and numpy's active SIMD targets."""
    return {k: v for k, v in run.items() if k not in ("raw", "numpy")}


def test_scores_embeddings_and_rebase_decisions_are_the_same_under_every_blas_kernel():
    runs = {kernel: _probe(OPENBLAS_CORETYPE=kernel) for kernel in ("Prescott", "Haswell", "SandyBridge")}
    if len({r["raw"] for r in runs.values()}) == 1:
        pytest.skip("this machine's BLAS ignores OPENBLAS_CORETYPE: the kernels cannot be varied here")
    for kernel, got in runs.items():
        assert _decided(got) == _decided(runs["Prescott"]), kernel
    assert any(runs["Prescott"]["search"])  # the search compared real hits, not empty lists


def test_scores_embeddings_and_rebase_decisions_are_the_same_with_numpys_loops_at_its_baseline():
    from numpy._core import _multiarray_umath as umath

    own = _probe(NPY_DISABLE_CPU_FEATURES=None)  # numpy's own choice, even inside make test's lowered pass
    if not own["numpy"]:
        pytest.skip("numpy dispatches to no SIMD target on this CPU: its loops cannot be lowered here")
    lowered = _probe(NPY_DISABLE_CPU_FEATURES=" ".join(umath.__cpu_dispatch__))
    assert lowered["numpy"] == []  # numpy really ran its baseline loops
    assert _decided(lowered) == _decided(own)
    assert any(own["search"])
