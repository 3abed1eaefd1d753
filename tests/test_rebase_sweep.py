"""Rebase sweeps without repeated work, checked against the slow paths kept as oracles: the fuzzy proposer's
bounded search against scoring every pair (`FuzzyPolicy(exhaustive=True)`), policies sharing one `Update`
against each on its own, the embedding cache's batches against one text at a time, and a whole sweep's
decisions against the stored ones (the same on every CPU)."""

import difflib
import gzip
import random
import sys
from pathlib import Path

import pytest

from overlay_kit import rebase
from overlay_kit.anchor import parse
from overlay_kit.studies import sim

BODY_OPS = sorted(set(sim.OPERATORS) - sim.FRONTMATTER_OPERATORS)


@pytest.fixture(scope="module")
def updates():
    """Body updates from generated histories (typical and adversarial) and from every body operator."""
    out = []
    for profile, n in (("typical", 6), ("adversarial", 6)):
        for seed in range(n):
            bodies = sim.generate_history(profile, 12, 0, seed=seed).bodies
            out += [(parse(bodies[k]), parse(bodies[k + 1])) for k in range(len(bodies) - 1)]
    for op in BODY_OPS:
        for k in range(8):
            rng = random.Random(f"sweep-oracle:{op}:{k}")
            text = sim.make_skill(rng)
            edit = sim.apply_operator(op, text, rng)
            if edit is not None:
                out.append((parse(sim._split(text)[1]), parse(sim._split(edit.text)[1])))
    return [u for u in out if u[0] != u[1]]


@pytest.mark.parametrize(
    "params", [{}, {"min_score": 0.3}, {"min_score": 0.9}, {"weights": (0.5, 0.3, 0.2)}, {"min_similarity": 0.9}]
)
def test_bounded_fuzzy_search_proposes_exactly_what_scoring_every_pair_does(updates, params):
    fast, oracle = rebase.FuzzyPolicy(**params), rebase.FuzzyPolicy(exhaustive=True, **params)
    proposals = 0
    for old, new in updates:
        got = rebase.plan_update(rebase.Update(old, new), fast)
        want = rebase.plan_update(rebase.Update(old, new), oracle)
        assert got == want
        proposals += sum(d.proposal is not None for d in want.decisions)
    assert proposals > 20  # the comparison covers real proposals, not only orphans without one


def test_the_bound_never_falls_below_the_exact_score(updates):
    """The pruning is only as good as its bound: for every orphan, the best exactly-scored section the bounded
    search keeps is the exhaustive winner whenever that winner reaches the threshold — and with a threshold
    of 0 the bounded search must score its way to the exhaustive winner every time."""
    fast, oracle = rebase.FuzzyPolicy(min_score=0.0), rebase.FuzzyPolicy(min_score=0.0, exhaustive=True)
    orphans = 0
    for old, new in updates:
        u = rebase.Update(old, new)
        for i, d in enumerate(rebase.SectionPolicy().decide(u)):
            if d.state == "orphaned" and new:
                orphans += 1
                assert fast._bounded(u, i) == oracle._exhaustive(u, i)
    assert orphans > 50


def test_negative_weights_fall_back_to_scoring_every_pair(updates):
    odd = {"weights": (1.0, 0.5, -0.5), "min_score": 0.2}
    for old, new in updates[:40]:
        assert rebase.plan(old, new, rebase.FuzzyPolicy(**odd)) == rebase.plan(
            old, new, rebase.FuzzyPolicy(exhaustive=True, **odd)
        )


class Terse(rebase.SectionPolicy):
    """A subclass with its own orphan reason: it must not be handed the parent's cached decisions."""

    @staticmethod
    def _why_orphan(update, s):
        return "gone?"


def test_policies_sharing_one_update_decide_as_each_does_on_its_own(updates):
    policies = [rebase.get_policy(n) for n in rebase.POLICIES] + [
        rebase.SectionPolicy(min_similarity=0.9),
        rebase.FuzzyPolicy(renumbering=False),
        Terse(),
    ]
    for old, new in updates:
        shared = rebase.Update(old, new)
        for p in policies:
            assert rebase.plan_update(shared, p) == rebase.plan_update(rebase.Update(old, new), p)
    assert any(
        d.reason == "gone?"
        for old, new in updates
        for d in rebase.plan_update(rebase.Update(old, new), Terse()).decisions
    )


class OneAtATime:
    """The default embedder called one text per batch, in the order asked: the unbatched oracle."""

    def __init__(self, embedder):
        self.embedder, self.calls = embedder, []

    def encode(self, texts):
        import numpy as np

        self.calls.append(list(texts))
        return np.concatenate([self.embedder.encode([t]) for t in texts])


def test_embedding_batches_give_the_vectors_of_one_text_at_a_time_and_encode_each_text_once(updates):
    from overlay_kit.retrieval import static_embedder

    counting = OneAtATime(static_embedder())
    batched = rebase.EmbeddingPolicy(embedder=counting)
    proposals = 0
    for old, new in updates:
        want = rebase.plan_update(
            rebase.Update(old, new), rebase.EmbeddingPolicy(embedder=OneAtATime(static_embedder()))
        )
        got = rebase.plan_update(rebase.Update(old, new), batched)
        assert got == want
        proposals += sum(d.proposal is not None for d in want.decisions)
    assert proposals > 10
    texts = [t for call in counting.calls for t in call]
    assert len(texts) == len(set(texts))  # each distinct section text encoded once per policy object
    assert all(call == sorted(call, key=len) for call in counting.calls)  # shortest first: least padding


# A whole sweep's decisions (every policy, every update: states, targets, proposals, reasons), one line per update and
# policy, stored gzipped in tests/fixtures/rebase_sweep_decisions.txt.gz. Every score is exact (`common.cosines`, rapidfuzz), so
# the lines are the same on every CPU and BLAS kernel (CI runs this file under two OpenBLAS kernels); the fast paths
# must reproduce them. A change that moves a decision shows as a readable difference; to accept one on purpose:
# `python tests/test_rebase_sweep.py --write`, and say why in the commit.
SWEEP_DECISIONS = Path(__file__).parent / "fixtures" / "rebase_sweep_decisions.txt.gz"


def _decision_text(d: rebase.Decision) -> str:
    out = f"{d.section} {d.state}" + (f"→{d.target}" if d.target and d.target != d.section else "")
    if d.proposal is not None:
        out += f" ⇒{d.proposal.section} {d.proposal.score:.4f} {d.proposal.method}"
    return out + (f" ({d.reason})" if d.reason else "")


def sweep_lines() -> list[str]:
    policies = [rebase.get_policy(n) for n in rebase.POLICIES]
    lines = []
    for profile, n in (("typical", 12), ("adversarial", 6)):
        for seed in range(n):
            bodies = sim.generate_history(profile, 20, 10, seed=seed).bodies
            for k in range(len(bodies) - 1):
                update = rebase.Update(parse(bodies[k]), parse(bodies[k + 1]))
                for p in policies:
                    plan = rebase.plan_update(update, p)
                    blank = ",".join(sorted(plan.blank))
                    lines.append(
                        f"{profile}/{seed} update {k} {plan.policy}"
                        f"{' body-changed' if plan.body_changed else ''}{' blank=' + blank if blank else ''}: "
                        + "; ".join(_decision_text(d) for d in plan.decisions)
                    )
    return lines


def test_a_sweep_decides_exactly_as_the_stored_decisions():
    want = gzip.decompress(SWEEP_DECISIONS.read_bytes()).decode("utf-8").splitlines()
    got = sweep_lines()
    if got != want:
        diff = list(difflib.unified_diff(want, got, "stored", "now", n=0, lineterm=""))
        pytest.fail(
            f"{sum(a != b for a, b in zip(want, got)) + abs(len(want) - len(got))} of {len(want)} "
            "update × policy lines differ from the stored decisions:\n" + "\n".join(diff[:24])
        )


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    SWEEP_DECISIONS.write_bytes(gzip.compress(("\n".join(sweep_lines()) + "\n").encode("utf-8"), mtime=0))
