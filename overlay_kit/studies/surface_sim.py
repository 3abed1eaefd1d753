"""A seeded, simulated week of use over the capability surfaces (the study of notebooks/09).

    turns = simulate_week(seed=0)                    # pure: the scenario, one `SimTurn` per task
    report = run_week(store, turns, skill=skill)     # drives every surface through its own lifecycle
    study = run(skill)                               # the memory study: .table(), .finding() (its rule file)

Each task is a short conversation, a rating of the answer, trace steps, a deliverable and sometimes an explicit
signal. `run_week` stores every signal as evidence, routes it, and hands routed ones to their surface's own
entry point: the memory writer after every turn; `KnowledgeBase.ingest` (pending; a reviewer marks it ready the
next morning); `gates.learn` (a staged delta); `create_draft` (the prompt changes only at the Friday release,
publish + activate); a program backlog (an engineering release, nothing written). Each rating's effect on
the surfaces is measured with `surface_digest` before and after (a contract, tested: ratings are evidence only).

The study (`run`) asks what the code does not fix: how often the automatic memory path keeps something a user
did not mean to be kept, and misses a durable fact they stated. `INTENT` is the simulator's ground truth for
every sentence a user can say; the decision rule is `datasets/rules/09_capability_evolution.yaml`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

import pandas as pd

from .. import gates
from ..common import bigram_similarity
from ..metrics import Interval, binomial_upper, rate_table, ratio_ci
from ..surfaces.knowledge import KnowledgeBase
from ..surfaces.memory import (
    Extractor,
    MemoryWriter,
    Message,
    memories,
    memory_runs,
    memory_save,
)
from ..surfaces.routing import (
    Signal,
    activate,
    create_draft,
    instructions,
    prompt_versions,
    publish,
    record_deliverable,
    record_feedback,
    record_signal,
    record_trace,
    surface_digest,
)
from . import rulefile
from .finding import Finding, render

if TYPE_CHECKING:
    from ..skill import Skill
    from ..store import Store

__all__ = [
    "INTENT",
    "RULE_NAME",
    "Share",
    "SimTurn",
    "WeekReport",
    "WeekStudy",
    "memory_quality",
    "run",
    "run_week",
    "simulate_week",
]

MONDAY = datetime(2025, 3, 3, 8, tzinfo=timezone.utc)
AGENT = "mail-assistant"
RELEASE_DAY = 4  # Friday: the week's prompt release (publish + activate the latest draft)

PLAIN = (
    "What needs a reply today?",
    "Summarize the thread from Bob.",
    "Draft a reply to the invoice mail.",
    "Archive the newsletters.",
    "Which invites are still open?",
    "Find the mail about the offsite.",
)
CUED = {  # per user: what they say about themselves over the week (durable, transient, correction)
    "ana": (
        "I always want amounts in EUR.",
        "I work as a tax accountant at Contoso.",
        "I'm working on the Q3 audit for the next few weeks.",
        "Today I want it short.",
        "No, I meant the Berlin office.",
        "I always want the amounts in EUR, please.",
    ),
    "ben": (
        "Please always put the summary first.",
        "My name is Ben and I lead the platform team.",
        "I prefer German for replies to the Munich office.",
        "Right now I want only the urgent ones.",
        "I prefer German for replies to the Munich team.",
    ),
    "chen": (
        "Call me Chen.",
        "I hate long emails.",
        "We're building the new billing service this quarter.",
        "I like the numbers in budget.xlsx.",
        "Actually, I meant next Tuesday.",
    ),
}
# Ground truth: what each sentence a user can say is, for memory. Only "durable" (a preference, identity fact or
# long-running project, useful next week) is meant to be kept; "transient" (today / right now), "correction" (it
# corrects the task at hand, not a stored fact) and "recoverable" (it points at a file) are not; PLAIN is "task".
INTENT = {
    "ana": {
        "I always want amounts in EUR.": "durable",
        "I work as a tax accountant at Contoso.": "durable",
        "I'm working on the Q3 audit for the next few weeks.": "durable",
        "Today I want it short.": "transient",
        "No, I meant the Berlin office.": "correction",
        "I always want the amounts in EUR, please.": "durable",
    },
    "ben": {
        "Please always put the summary first.": "durable",
        "My name is Ben and I lead the platform team.": "durable",
        "I prefer German for replies to the Munich office.": "durable",
        "Right now I want only the urgent ones.": "transient",
        "I prefer German for replies to the Munich team.": "durable",
    },
    "chen": {
        "Call me Chen.": "durable",
        "I hate long emails.": "durable",
        "We're building the new billing service this quarter.": "durable",
        "I like the numbers in budget.xlsx.": "recoverable",
        "Actually, I meant next Tuesday.": "correction",
    },
}
# Each user's first task of the week uses the explicit memory_save tool (a manual memory).
REMEMBER = {
    "ana": ("preference", "I always want amounts in EUR."),
    "ben": ("preference", "Please always put the summary first."),
    "chen": ("identity", "Call me Chen."),
}
SIGNALS = (  # (probability per task, kind, texts, owner fields)
    (
        0.12,
        "missing_material",
        (
            "no internal doc on the travel expense policy",
            "the offsite agenda is not in the knowledge base",
            "no page explains the invoice approval chain",
        ),
        {},
    ),
    (
        0.10,
        "procedure",
        ("check the sender domain before labelling mail urgent", "summarize long threads before drafting a reply"),
        {"skill": "triage-inbox"},
    ),
    (
        0.06,
        "boundary",
        ("never promise delivery dates on behalf of the user", "do not give tax advice; point to the finance team"),
        {"agent": AGENT},
    ),
    (
        0.05,
        "deterministic_rule",
        ("an IBAN must pass its checksum before a payment mail is drafted",),
        {"cross_task": True},
    ),
    (0.08, "failure", ("the calendar tool timed out", "the draft lost its attachments"), {}),
    (0.04, "procedure", ("do the urgent ones first",), {}),  # no skill named: ambiguous, evidence only
)
DOCS = {  # what the knowledge owner writes for each missing-material signal: (document id, Markdown)
    "no internal doc on the travel expense policy": (
        "kb/travel-expenses",
        "Travel expense policy\n=====================\n\nMeals are capped at 40 EUR a day.\n\nTrains\n------\n"
        "Book second class.\n",
    ),
    "the offsite agenda is not in the knowledge base": (
        "kb/offsite",
        "# Offsite agenda\n\nDay one is planning; day two is the hackathon.\n",
    ),
    "no page explains the invoice approval chain": (
        "kb/invoice-approval",
        "# Invoice approval\n\nInvoices over 5,000 EUR need the CFO.\n\n## Small invoices\n\nTeam leads approve.\n",
    ),
}
SECTIONS = {
    "check the sender domain before labelling mail urgent": "classifying",
    "summarize long threads before drafting a reply": "drafting-replies",
}


@dataclass(frozen=True)
class SimTurn:
    day: int
    task: str
    user: str
    at: datetime
    messages: tuple[Message, ...]
    tools_used: tuple[str, ...]
    remember: tuple[str, str] | None  # an explicit memory_save (type, content) made in this turn
    rating: str | None
    failed_step: str | None
    signal: Signal | None


def simulate_week(seed: int = 0, *, days: int = 5, tasks_per_day: int = 12) -> list[SimTurn]:
    """The scenario: deterministic for a seed. Users talk mostly about work, sometimes about themselves."""
    rng = random.Random(seed)
    users = sorted(CUED)
    turns, seen = [], set()
    for day in range(days):
        for n in range(tasks_per_day):
            user, task = rng.choice(users), f"d{day + 1}-t{n + 1:02d}"
            at = MONDAY + timedelta(days=day, minutes=40 * n)
            msgs = []
            for _ in range(rng.randint(1, 4)):
                said = rng.choice(CUED[user]) if rng.random() < 0.3 else rng.choice(PLAIN)
                msgs += [Message("user", said), Message("assistant", "Done.")]
            remember = None if user in seen else REMEMBER[user]
            seen.add(user)
            rating = rng.choices(("positive", "negative", "cleared", None), (0.55, 0.25, 0.05, 0.15))[0]
            failed = rng.choice(("calendar_lookup", "send_draft")) if rng.random() < 0.1 else None
            signal = None
            for p, kind, texts, owner in SIGNALS:
                if rng.random() < p:
                    signal = Signal(kind, rng.choice(texts), task=task, at=at, **owner)
                    break
            turns.append(
                SimTurn(
                    day,
                    task,
                    user,
                    at,
                    tuple(msgs),
                    ("memory_save",) if remember else (),
                    remember,
                    rating,
                    failed,
                    signal,
                )
            )
    return turns


@dataclass
class WeekReport:
    signals: pd.DataFrame  # day, task, kind, surface, rule, applied
    days: pd.DataFrame  # end-of-day state of every surface
    memory_runs: pd.DataFrame  # day, user, outcome, cues, decisions
    decisions: pd.DataFrame  # one row per reconciliation decision
    memories: pd.DataFrame  # final user memories
    extractor_calls: int
    rating_changes: int  # ratings after which any surface differed (0 by design; a tested contract)
    ratings: int
    backlog: list[str] = field(default_factory=list)  # program/tool rules awaiting an engineering release


class _Counting:
    def __init__(self, inner: Extractor):
        self.inner, self.calls = inner, 0

    def __call__(self, pairs):
        self.calls += 1
        return self.inner(pairs)


def run_week(
    store: "Store",
    turns: list[SimTurn],
    *,
    skill: "Skill",
    extractor: Extractor | None = None,
    initial_prompt: str = "You are the mail assistant. Be brief.",
) -> WeekReport:
    """Drive every surface through the scenario; return what happened, day by day."""
    from ..surfaces.memory import RuleExtractor

    counting = _Counting(extractor if extractor is not None else RuleExtractor())
    activate(store, publish(store, create_draft(store, AGENT, initial_prompt).id).id)
    sig_rows, day_rows, backlog, futures = [], [], [], []
    rating_changes = ratings = 0
    pending_review: list[str] = []
    with MemoryWriter(store, counting) as writer, KnowledgeBase(store) as kb:
        for day in sorted({t.day for t in turns}):
            for doc_id in pending_review:  # the reviewer's morning pass over yesterday's imports
                if kb.get(doc_id).status == "pending":
                    kb.mark_ready(doc_id)
            pending_review = []
            for t in (t for t in turns if t.day == day):
                record_trace(store, t.task, "plan", "ok", usage={"prompt_tokens": 900 + 40 * len(t.messages)}, at=t.at)
                if t.failed_step:
                    record_trace(store, t.task, t.failed_step, "failed", detail="tool error", at=t.at)
                record_deliverable(store, t.task, "reply", t.failed_step is None, at=t.at)
                if t.remember:
                    memory_save(store, t.user, *t.remember)
                futures.append(writer.after_turn(t.user, t.messages, turn=t.task, tools_used=t.tools_used))
                if t.rating:
                    _drain(futures, kb)  # let background writers finish, so the digest sees the rating alone
                    before = surface_digest(store)
                    record_feedback(store, t.task, f"{t.task}/answer", t.rating, at=t.at + timedelta(minutes=5))
                    rating_changes += surface_digest(store) != before
                    ratings += 1
                if t.signal is None:
                    continue
                rec = record_signal(store, t.signal)
                applied = _apply(store, kb, skill, rec.routing.surface, t.signal, backlog)
                if rec.routing.surface == "knowledge":
                    pending_review.append(applied)
                sig_rows.append(
                    {
                        "day": day + 1,
                        "task": t.task,
                        "kind": t.signal.kind,
                        "surface": rec.routing.surface or "evidence only",
                        "rule": rec.routing.rule,
                        "applied": applied,
                    }
                )
            if day == RELEASE_DAY:  # the release step: the latest draft is published, then activated
                drafts = [p for p in prompt_versions(store, AGENT) if p.status == "draft"]
                if drafts:
                    activate(store, publish(store, drafts[-1].id).id)
            _drain(futures, kb)
            day_rows.append(_snapshot(store, kb, day + 1))
    runs = memory_runs(store)
    run_day = {t.task: t.day + 1 for t in turns}
    mem_rows = [
        {
            "day": run_day.get(r.turn),
            "user": r.user,
            "turn": r.turn,
            "outcome": r.outcome,
            "cues": ", ".join(r.cues),
            "written": r.written,
        }
        for r in runs
    ]
    dec_rows = [
        {"day": run_day.get(r.turn), "user": r.user, "action": d.action, "type": d.type, "content": d.content}
        for r in runs
        for d in r.decisions
    ]
    mems = [
        {"user": m.user, "type": m.type, "source": m.source, "content": m.content}
        for u in sorted(CUED)
        for m in memories(store, u)
    ]
    return WeekReport(
        pd.DataFrame(sig_rows),
        pd.DataFrame(day_rows),
        pd.DataFrame(mem_rows),
        pd.DataFrame(dec_rows),
        pd.DataFrame(mems),
        counting.calls,
        rating_changes,
        ratings,
        backlog,
    )


def _drain(futures: list, kb: KnowledgeBase) -> None:
    for f in futures:
        f.result()
    kb.wait()


def _apply(store, kb: KnowledgeBase, skill, surface: str | None, s: Signal, backlog: list[str]) -> str:
    """Hand a routed signal to its surface's own entry point; return what was created."""
    if surface == "knowledge":
        doc_id, markdown = DOCS[s.text]
        kb.ingest(doc_id, markdown)  # import or re-ingest: pending until the reviewer's pass
        return doc_id
    if surface == "skill_overlay":
        res = gates.learn(
            store,
            skill,
            "preference",
            {"body": s.text[:1].upper() + s.text[1:] + "."},
            section=SECTIONS.get(s.text),
            provenance="user_instruction",
            scope="user",
        )
        return f"delta {res.outcome}"
    if surface == "prompt":
        draft = create_draft(store, AGENT, instructions(store, AGENT) + "\n" + s.text[:1].upper() + s.text[1:] + ".")
        return f"draft v{draft.version}"
    if surface == "program":
        backlog.append(s.text)
        return "engineering backlog"
    return "none"


def _snapshot(store: "Store", kb: KnowledgeBase, day: int) -> dict:
    versions = prompt_versions(store, AGENT)
    active = next((p.version for p in versions if p.active), None)
    deltas = store.counts()
    return {
        "day": day,
        "memories_auto": store.memories.total("auto"),
        "memories_manual": store.memories.total("manual"),
        "docs_pending": len(kb.documents("pending")),
        "docs_ready": len(kb.documents("ready")),
        "deltas_staged": deltas.get("staged", 0),
        "deltas_active": deltas.get("active", 0),
        "prompt_drafts": sum(p.status == "draft" for p in versions),
        "prompt_active_version": active,
        "negative_ratings": store.task_log.count_feedback("negative"),
    }


# ------------------------------------------------------------------------------------------- the study

RULE_NAME = "09_capability_evolution"  # datasets/rules/09_capability_evolution.yaml


def _label(labels: dict, user: str, sentence: str) -> str:
    return labels.get(user, {}).get(sentence, "task")


def memory_quality(
    turns: list[SimTurn], final: pd.DataFrame, *, labels: dict, keep, coverage: float
) -> tuple[list[dict], list[dict]]:
    """One week's memory against the ground truth: per user, automatic memories at the week's end and those not
    meant to be kept (each attributed to the user's catalogue sentence most similar to it), and the distinct
    durable sentences the user said and those no memory of theirs covers (bigram similarity ≥ `coverage`).
    Returns (one row per user, one example row per unwanted or missed item)."""
    keep = frozenset(keep)
    rows, examples = [], []
    for user in sorted({t.user for t in turns}):
        catalogue = list(labels.get(user, {})) + [p for p in PLAIN if p not in labels.get(user, {})]
        mine = final[final.user == user] if len(final) else final
        auto = mine[mine.source == "auto"] if len(mine) else mine
        row = {"user": user, "auto_memories": len(auto), "unwanted": 0, "durable_said": 0, "missed": 0}
        for content in auto.content if len(auto) else ():
            source = max(catalogue, key=lambda c: bigram_similarity(content, c))
            label = _label(labels, user, source)
            if label not in keep:
                row["unwanted"] += 1
                row[f"unwanted_{label}"] = row.get(f"unwanted_{label}", 0) + 1
                examples.append({"user": user, "kind": "unwanted", "label": label, "sentence": content})
        said = {m.content for t in turns if t.user == user for m in t.messages if m.role == "user"}
        for sentence in sorted(s for s in said if _label(labels, user, s) in keep):
            row["durable_said"] += 1
            held = list(mine.content) if len(mine) else []
            if not any(bigram_similarity(sentence, m) >= coverage for m in held):
                row["missed"] += 1
                examples.append(
                    {"user": user, "kind": "missed", "label": _label(labels, user, sentence), "sentence": sentence}
                )
        rows.append(row)
    return rows, examples


@dataclass(frozen=True)
class Share:
    """One share of the study against its target: the pooled estimate, its interval over weeks, the verdict."""

    name: str
    interval: Interval
    target: float
    verdict: str  # within target | over target | undecided

    @property
    def half_width(self) -> float:
        return (self.interval.high - self.interval.low) / 2


def _share(name: str, num, den, target: float, rule: rulefile.RuleFile) -> Share:
    conf = float(rule.param("confidence"))
    if sum(den) == 0:
        ci = Interval(float("nan"), float("nan"), float("nan"), conf, len(den))
    elif sum(num) == 0:  # a degenerate bootstrap: bound the share of weeks with any, exactly
        ci = Interval(0.0, 0.0, binomial_upper(0, len(den), conf).high, conf, len(den))
    else:
        ci = ratio_ci(
            num, den, n_resamples=int(rule.param("resamples")), confidence=conf, seed=int(rule.param("bootstrap_seed"))
        )
    if ci.high <= target:
        verdict = "within target"
    elif ci.low > target:
        verdict = "over target"
    else:
        verdict = "undecided"  # also when there is no estimate at all (NaN compares false)
    return Share(name, ci, float(target), verdict)


@dataclass(frozen=True)
class WeekStudy:
    """`run`'s result: one row per (seed, user) with automatic memories, unwanted ones, durable sentences said and
    missed ones; the verdict comes from `rule` (its params), over the seed as the independent unit."""

    rows: tuple[dict, ...]
    rule: rulefile.RuleFile
    examples: tuple[dict, ...] = ()

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(list(self.rows)).fillna(0)

    def by_user(self) -> pd.DataFrame:
        """Descriptive: each user's shares with intervals that resample weeks (not part of the verdict); a share
        never seen gets the same exact bound over weeks as the verdict's (a bootstrap of zeros is [0, 0])."""
        t, conf = self.table(), float(self.rule.param("confidence"))
        rates = {"unwanted share": ("unwanted", "auto_memories"), "missed share": ("missed", "durable_said")}
        out = rate_table(
            t,
            "user",
            "seed",
            rates,
            n_resamples=int(self.rule.param("resamples")),
            confidence=conf,
            seed=int(self.rule.param("bootstrap_seed")),
        )
        for name, (_, den) in rates.items():
            weeks = t[t[den] > 0].groupby("user").seed.nunique()
            for i in out.index[out[name] == 0]:
                out.loc[i, f"{name}_high"] = binomial_upper(0, int(weeks[out.user[i]]), conf).high
        return out

    def shares(self) -> tuple[Share, Share]:
        per = self.table().groupby("seed")[["unwanted", "auto_memories", "missed", "durable_said"]].sum()
        return (
            _share(
                "unwanted share",
                per.unwanted.to_numpy(),
                per.auto_memories.to_numpy(),
                float(self.rule.param("unwanted_target")),
                self.rule,
            ),
            _share(
                "missed share",
                per.missed.to_numpy(),
                per.durable_said.to_numpy(),
                float(self.rule.param("missed_target")),
                self.rule,
            ),
        )

    def verdict(self) -> str:
        """over target | within both targets | undecided (the rule's "Overall")."""
        verdicts = [s.verdict for s in self.shares()]
        if "over target" in verdicts:
            return "over target"
        return "within both targets" if set(verdicts) == {"within target"} else "undecided"

    def summary(self) -> pd.DataFrame:
        """The figures the verdict is computed from, one row per share."""
        return pd.DataFrame(
            [
                {
                    "share": s.name,
                    "estimate": s.interval.estimate,
                    "low": s.interval.low,
                    "high": s.interval.high,
                    "half-width": s.half_width,
                    "target": s.target,
                    "weeks": s.interval.n,
                    "verdict": s.verdict,
                }
                for s in self.shares()
            ]
        )

    def finding(self) -> str:
        shares, n = self.shares(), self.table().seed.nunique()
        conf = f"{float(self.rule.param('confidence')):.0%}"
        findings = []
        for s in shares:
            note = ""
            if s.verdict == "undecided" and s.interval.estimate == 0:
                note = (
                    f"none seen but {s.interval.n} weeks bound it only at ≤ {s.interval.high:.3f}; "
                    f"no difference from the bound detected at this n"
                )
            elif s.verdict == "undecided":
                note = (
                    f"the interval straddles the bound; no difference from it detected at an "
                    f"MDE of ±{s.half_width:.3f} (the half-width this design resolves)"
                )
            findings.append(Finding.of(s.name, s.interval, bound=s.target, verdict=s.verdict, note=note))
        head = {
            "over target": "**Over target**",
            "within both targets": "**Within both targets**",
            "undecided": "**Undecided (too little power)**",
        }[self.verdict()]
        return render(
            findings,
            intro=f"{head} over {n} simulated weeks ({conf} intervals resampling weeks):",
            joiner="; ",
            outro=".",
        )


def run(skill: "Skill", seeds=None, *, rule: rulefile.RuleFile | str | None = None) -> WeekStudy:
    """The simulated week under each of the rule's seeds (or `seeds`), each in its own temporary store; the
    memory path judged against the simulator's ground truth. `rule` is a loaded rule, a path or a name
    (default: this study's rule file)."""
    import os
    import tempfile

    from ..store import Store

    if not isinstance(rule, rulefile.RuleFile):
        rule = rulefile.load(rule if rule is not None else RULE_NAME)
    if rule.param("extractor") != "RuleExtractor":
        raise rulefile.RuleFileError(rule.path, "params.extractor", "this study runs the RuleExtractor only")
    seeds = range(int(rule.param("seeds"))) if seeds is None else seeds
    labels, keep, coverage = rule.param("labels"), rule.param("keep"), float(rule.param("coverage_similarity"))
    rows, examples = [], []
    for seed in seeds:
        turns = simulate_week(seed, days=int(rule.param("days")), tasks_per_day=int(rule.param("tasks_per_day")))
        with tempfile.TemporaryDirectory() as d, Store.open(os.path.join(d, "week.db")) as store:
            w = run_week(store, turns, skill=skill)
        per_user, ex = memory_quality(turns, w.memories, labels=labels, keep=keep, coverage=coverage)
        rows += [{"seed": seed, **r} for r in per_user]
        examples += [{"seed": seed, **e} for e in ex]
    return WeekStudy(tuple(rows), rule, tuple(examples))
