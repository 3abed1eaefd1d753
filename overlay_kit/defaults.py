"""What overlay_kit ships, in one place: every setting a designer chooses for users.

The product reads these (the gates, the store, the budget, evidence, the tool loader, rebase, retrieval, the
CLI), and every study and simulator starts from them: a study that varies one names the variation
(`SHIPPED.varied(settings)`), and `tests/test_defaults.py` fails when any baseline differs from what ships. A
finding about a default changes it here, and the notebooks that judged it are re-run.

    from overlay_kit.defaults import SHIPPED
    SHIPPED.ceiling            # 16384
    SHIPPED.varied(settings)   # {"min_samples": (5, 3)}: what a study's settings change, shipped → studied

The retrieval gate is not a number here: each embedder ships its own calibration (datasets/tau/gates, written by
notebook 04's study); `retrieval_gate = "calibrated"` says the product uses it, and a study passing `tau=None`
does the same.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

__all__ = ["SHIPPED", "Defaults"]


@dataclass(frozen=True)
class Defaults:
    # retrieval of tier-3 lessons for a session goal
    embedder: str = "wordllama"  # the bundled static embedder (`retrieval.load_embedder` name)
    retrieval_gate: str = "calibrated"  # the embedder's shipped calibration (datasets/tau/gates)
    # the resident budget: half of the 32,768-token NPU window for every loaded skill and what it learned (the
    # other half: system scaffold, tools, conversation, answer); the 201-section example runbook alone is ~11.7k.
    # Set by notebook 06's rule (datasets/rules/06_budget_tuning.yaml): the smallest ceiling that keeps needed
    # lessons in front of the model across its authored-load profiles; change it only with that study
    ceiling: int = 16384
    # Tier-3 selection (`overlay_kit.selection`; notebook 18, datasets/rules/18_selection.yaml). With a goal, an
    # agent holding more than `resident_max` resident tier-3 lessons gets only the `select_k` the goal scores best:
    # the goal's cosine to a lesson's triggers and text (their centroid, `select_pool`), plus `select_lexical` x
    # its tf-idf cosine and `select_section` x its cosine to the lesson's section; up to `resident_max` they all
    # stay. No selection tried kept irrelevant lessons under a fifth of what it put in context while finding the
    # needed one for most goals, and the compliance study found up to 20 irrelevant lessons in context harmless
    # (notebook 17's k_safe): so a goal gets its 20 best, and an agent with 20 or fewer keeps them all.
    resident_max: int = 20
    select_k: int = 20
    select_lexical: float = 1.0
    select_section: float = 0.0
    select_pool: str = "centroid"
    # kept free under the ceiling for lessons a goal retrieves (about ten 400-character lessons; at most an
    # eighth of a small ceiling)
    retrieval_reserve: int = 1024
    consolidate_score: float = 90.0  # rapidfuzz token_set_ratio at or above which two lessons are near-duplicates
    # promotion of a staged, trusted lesson on outcome evidence (`gates.promote`, `evidence.review_staged`)
    min_samples: int = 5
    threshold: float = 0.85
    wilson: bool = False
    z: float = 1.96
    retire_below: float | None = None  # archive a staged lesson whose success rate falls below this (None: never)
    # review
    auto_approve: bool = False  # trusted lessons start staged; on: `user_instruction` lessons start active
    noop_repeats: bool = True  # a repeat of a live lesson writes nothing
    # A lesson's scope when none is given: "agent" keeps it with the agent that learned it (`agent:<name>`, the
    # name its store was opened for), "user" shares it with every agent of the user. Set by notebook 11's rule
    # (datasets/rules/11_scope_default.yaml): sharing by user put lessons from the user's other context (work,
    # personal) in front of an agent in more sessions than the rule's bound across its stated assumptions.
    scope: str = "agent"
    # base updates, decay, tools
    rebase_policy: str = "section"
    # How resolve shows a stale lesson (its section changed since it was learned; `rebase.confirm_stale` clears
    # the flag): "keep" applies it as is, "mark" applies it behind a may-be-outdated marker, "withhold" leaves it
    # out with a note. Set by notebook 17's rule (datasets/rules/17_compliance.yaml): with a real model in the loop
    # the marker did not change what the model did (keep and mark tie at the rule's share of true flags; withhold
    # errs more), and the tie goes to the marker, which also tells whoever reads the prompt.
    stale_policy: str = "mark"
    # True: on a base update, a lesson whose section changed is flagged stale only when the edit touches what it
    # refers to (`touch.touches`: the section rewritten, or a word of the lesson in a changed line); an untouched
    # one is re-keyed clean, audited "section changed, but not what this lesson refers to". False (shipped): every
    # lesson on a changed section is flagged. On held-out real histories (benchmarks/touch_accuracy.py,
    # datasets/histories/touch_results.json) touching raised the flag's precision from 0.71 to 0.80 at recall 0.93
    # (from 0.95). Decided by notebook 10's rule (datasets/rules/10_stale_touch.yaml) on fresh seeds of both of
    # its worlds, where each lesson refers to an authored line and turns wrong when an edit reaches it: touching
    # showed no more wrong lessons to the model in either (non-inferior at 0.02) and halved the review prompts at
    # realistic scale, but in the τ world saved 0.21 prompts a base update, under the rule's margin of 0.25: off.
    stale_touch: bool = False
    # A lesson learned without a section anchors where `anchoring.propose` puts it only when its confidence (the
    # score margin over the runner-up, 1.0 for a lone candidate) reaches this; below, the section is asked. The
    # smallest margin at which proposals were right >= 95 % of the time on the development split of real
    # additions (benchmarks/anchoring_accuracy.py --tune); no margin below 1.0 got there (the best, 0.2, was
    # right 53 % of the time), so only a skill with one candidate section anchors without asking.
    anchor_confidence: float = 1.0
    # `evidence.decay` (run on request): None, age alone demotes nothing and last use only ranks (the budget's
    # order when the ceiling binds); N, an active tier-3 lesson unused N days is demoted to retrieval-only. Set
    # by notebook 14's rule (datasets/rules/14_decay.yaml): every idle bound studied cost the lessons a user
    # rarely triggers more than the rule allows, for little gain in the precision of what is resident.
    decay_idle_days: int | None = None
    max_tools: int = 14
    # The injection scan's reader (issue 40): a logistic model over multilingual-e5's embedding that reads what the
    # phrase detectors and the lexicon leave clean (`injection.reader_scores`; needs the extra overlay_kit[e5]).
    # Off: on the frozen held-out10 set it caught 170 of 240 attacks (0.71; >= 0.8 in French and Italian only)
    # at 27 of 375 ordinary lessons flagged (0.072), short of the issue's >= 0.8 in ten languages at <= 5 %, and it
    # costs a clean lesson's scan ~100x (docs/reliability.md); on the fresher heldout11, 164 of 240 at 40 of 375,
    # on heldout12 180 of 240 at 41 of 375. On, auto-approve still keeps to English (`AUTO_APPROVE_LANGUAGES`).
    scan_reader: bool = False

    def varied(self, settings: Any) -> dict[str, tuple[Any, Any]]:
        """{name: (shipped, studied)} for each default that `settings` (any object or mapping naming some of
        these fields) sets to another value."""
        get = settings.get if isinstance(settings, dict) else lambda name, miss: getattr(settings, name, miss)
        miss = object()
        out = {}
        for f in fields(self):
            studied = get(f.name, miss)
            if studied is not miss and studied != getattr(self, f.name):
                out[f.name] = (getattr(self, f.name), studied)
        return out


SHIPPED = Defaults()
