"""Rebase sweeps without repeated work, checked against the slow paths kept as oracles: the fuzzy proposer's
bounded search against scoring every pair (`FuzzyPolicy(exhaustive=True)`), policies sharing one `Update`
against each on its own, the embedding cache's batches against one text at a time, and a whole sweep's
decisions against the digest the code before these changes produced."""

import hashlib
import json
import random

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


@pytest.mark.parametrize("params", [{}, {"min_score": 0.3}, {"min_score": 0.9}, {"weights": (0.5, 0.3, 0.2)},
                                    {"min_similarity": 0.9}])
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
        assert rebase.plan(old, new, rebase.FuzzyPolicy(**odd)) == \
            rebase.plan(old, new, rebase.FuzzyPolicy(exhaustive=True, **odd))


class Terse(rebase.SectionPolicy):
    """A subclass with its own orphan reason: it must not be handed the parent's cached decisions."""

    @staticmethod
    def _why_orphan(update, s):
        return "gone?"


def test_policies_sharing_one_update_decide_as_each_does_on_its_own(updates):
    policies = [rebase.get_policy(n) for n in rebase.POLICIES] + [rebase.SectionPolicy(min_similarity=0.9),
                                                                   rebase.FuzzyPolicy(renumbering=False), Terse()]
    for old, new in updates:
        shared = rebase.Update(old, new)
        for p in policies:
            assert rebase.plan_update(shared, p) == rebase.plan_update(rebase.Update(old, new), p)
    assert any(d.reason == "gone?" for old, new in updates
               for d in rebase.plan_update(rebase.Update(old, new), Terse()).decisions)


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
        want = rebase.plan_update(rebase.Update(old, new),
                                  rebase.EmbeddingPolicy(embedder=OneAtATime(static_embedder())))
        got = rebase.plan_update(rebase.Update(old, new), batched)
        assert got == want
        proposals += sum(d.proposal is not None for d in want.decisions)
    assert proposals > 10
    texts = [t for call in counting.calls for t in call]
    assert len(texts) == len(set(texts))  # each distinct section text encoded once per policy object
    assert all(call == sorted(call, key=len) for call in counting.calls)  # shortest first: least padding


# A whole sweep's decisions (every policy, every update, proposals and reasons), hashed. Computed by the code
# before the sweep speed-ups (commit eae3262: every pair scored, every policy matching on its own); the fast
# path must reproduce it. Scores enter rounded to 4 places (`Decision.to_dict`), so BLAS differences between
# machines in the embedding cosines do not move it; a new release of a dependency can (the first value,
# 88e66360…, moved with the packages a fresh `make venv` resolved on 2026-12-05). To recompute it with the
# reference code: `git worktree add /tmp/ref eae3262`, then run this test's loop with PYTHONPATH=/tmp/ref.
SWEEP_DIGEST = "34163f567d54e88be6ac334f8107088a102244ec263c9871b67e331f4af32429"  # eae3262, 2026-12-05


def test_a_sweep_decides_exactly_as_before_the_speed_ups():
    histories = [sim.generate_history(profile, 20, 10, seed=s)
                 for profile, n in (("typical", 12), ("adversarial", 6)) for s in range(n)]
    policies = [rebase.get_policy(n) for n in rebase.POLICIES]
    h = hashlib.sha256()
    for history in histories:
        bodies = history.bodies
        for k in range(len(bodies) - 1):
            update = rebase.Update(parse(bodies[k]), parse(bodies[k + 1]))
            for p in policies:
                plan = rebase.plan_update(update, p)
                h.update(json.dumps([plan.policy, plan.body_changed, sorted(plan.blank),
                                     [d.to_dict() for d in plan.decisions]]).encode())
    assert h.hexdigest() == SWEEP_DIGEST
