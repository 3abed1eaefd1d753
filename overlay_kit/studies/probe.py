"""The live-model arm of the tier-2 probe: does a model act on a learned value, and does the representation matter?

Each `Scenario` (datasets/lessons/scenarios.yaml) is one learned value and a task that depends on it. Arms:

* `control` — the authored skill only (what the model does without the lesson);
* `tier2`   — a typed `parameter` delta rendered as one line under its section;
* `tier3`   — the same lesson as a prose `preference` line under its section;
* `tier0`   — the value stored as a fact and read by a wired tool through `overlay_kit.facts`; the model
  sees the tool's output (select scenarios only — no tool produces free text).

Every learned representation goes through the real write path (`gates.learn` into an in-memory store) and
the real rendering (`resolve.resolve`), so the prompt is exactly what a session would see. The expected
answer is what the wired tool computes from the fact; each scenario also carries a hand-written `expect`
that the loader checks against it, and the control answer must differ (so no checker passes by default).
Checkers are deterministic: a JSON list of ids compared as a set, or sentences / words / list items
counted against the learned limit.

No verdict without power: `Power` says how many text scenarios a tier 2 − tier 3 compliance difference of 0.2
needs (49), `ProbeRun.compliance()` resamples scenarios and is None below that, and `ProbeRun.finding()` says so.

`run(client, …)` talks to a local Lemonade (or any OpenAI-compatible) server through `overlay_kit.llm`.
When nothing answers, or a replay cassette lacks a request, the run says it was skipped and why — a
`ProbeRun` never holds a made-up reply.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import NormalDist
from typing import Any

import pandas as pd
import yaml

from .. import gates
from ..facts import Consumers, Facts
from ..llm.client import LemonadeClient, LLMError, Skipped
from ..metrics import Interval, mean_ci, wilson_lower_bound
from ..resolve import resolve
from ..resources import dataset_path
from ..store import Store
from .lessons import Source, load_source

__all__ = ["ARMS", "DEFAULT_SCENARIOS", "ArmResult", "Power", "ProbeError", "ProbeRun", "Scenario", "check",
           "load_scenarios", "prompts", "run", "scenario_table"]

DEFAULT_SCENARIOS = dataset_path("lessons", "scenarios.yaml")
ARMS = ("control", "tier2", "tier3", "tier0")
OPS: Mapping[str, Callable[[Any, Any], bool]] = {
    "greater": lambda a, b: a > b, "at_least": lambda a, b: a >= b, "less": lambda a, b: a < b,
    "at_most": lambda a, b: a <= b, "not_before": lambda a, b: str(a) >= str(b)}
MEASURES = ("sentences", "words", "list_items")
ANSWER_FORMAT = "Answer with only a JSON list of the item ids, for example [\"x1\", \"x2\"], and nothing else."


class ProbeError(ValueError):
    """A malformed scenario file; names the file and the scenario field."""


@dataclass(frozen=True)
class Scenario:
    id: str
    domain: str
    section: str
    namespace: str
    key: str
    value: Any
    scope: str
    prose: str
    task: str
    default: Any = None
    tool: str | None = None  # select scenarios: the wired tool that reads the fact
    rule: Mapping[str, Any] = field(default_factory=dict)
    items: tuple[Mapping[str, Any], ...] = ()
    expect: tuple[str, ...] = ()
    check: Mapping[str, Any] = field(default_factory=dict)  # text scenarios

    @property
    def kind(self) -> str:
        return "select" if self.tool else "text"

    @property
    def arms(self) -> tuple[str, ...]:
        return ARMS if self.kind == "select" else ARMS[:3]

    @property
    def member(self) -> bool:
        return self.rule.get("op") in ("member", "not_member")


def load_scenarios(path: str | Path = DEFAULT_SCENARIOS, source: Source | None = None) -> tuple[Scenario, ...]:
    """Read and check the scenarios: known domain/section, a tool or a check, `expect` equal to what the
    wired tool computes, and a control answer that differs from it."""
    path = Path(path)
    source = source or load_source()
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ProbeError(f"{path}: {exc}") from exc
    out = []
    for i, raw in enumerate(doc.get("scenarios") or []):
        where = f"{path}: scenarios[{i}] ({raw.get('id')})"
        try:
            fact = raw["fact"]
            sc = Scenario(raw["id"], raw["domain"], raw["section"], fact["namespace"], str(fact["key"]),
                          fact["value"], fact.get("scope", "user"), raw["prose"], " ".join(raw["task"].split()),
                          raw.get("default"), raw.get("tool"), dict(raw.get("rule") or {}),
                          tuple(dict(x) for x in raw.get("items") or ()), tuple(raw.get("expect") or ()),
                          dict(raw.get("check") or {}))
        except (KeyError, TypeError, AttributeError) as exc:
            raise ProbeError(f"{where}: missing or malformed field {exc}") from exc
        if sc.domain not in source.domains:
            raise ProbeError(f"{where}.domain: {sc.domain!r} is not a corpus domain")
        source.namespace(sc.domain, sc.namespace)  # raises CorpusError when unknown
        if sc.kind == "select":
            op = sc.rule.get("op")
            if op not in OPS and not sc.member:
                raise ProbeError(f"{where}.rule.op: {op!r} is not one of {', '.join([*OPS, 'member', 'not_member'])}")
            if not sc.items or any("id" not in x or sc.rule.get("attr") not in x for x in sc.items):
                raise ProbeError(f"{where}.items: every item needs an id and the rule's attr")
            with Store.open(":memory:") as empty:
                control = select(sc, empty, source)
            with _learned_store(sc, "tier0", source) as store:
                learned = select(sc, store, source)
            if sc.expect and set(sc.expect) != set(learned):
                raise ProbeError(f"{where}.expect: {sorted(sc.expect)} but the wired tool selects {sorted(learned)}")
            if set(control) == set(learned):
                raise ProbeError(f"{where}: the learned value does not change the answer; the checker could not fail")
        else:
            _check_text(sc, source, where)
        if sc.id in {o.id for o in out}:
            raise ProbeError(f"{where}.id: {sc.id!r} is used twice")
        out.append(sc)
    return tuple(out)


def _check_text(sc: Scenario, source: Source, where: str) -> None:
    """A text scenario stands for a leftover lesson: a count no tool could read, and the check is that count."""
    if sc.check.get("measure") not in MEASURES or not isinstance(sc.check.get("at_most"), int):
        raise ProbeError(f"{where}.check: needs measure in {MEASURES} and an integer at_most")
    ns = source.namespace(sc.domain, sc.namespace)
    if not ns.why_no_tool:
        raise ProbeError(f"{where}.fact.namespace: a tool could read {sc.namespace!r}; text scenarios test values "
                         "no tool can read")
    spec = ns.spec(sc.key)
    if spec is None or spec.key is None or spec.shape != "count":
        raise ProbeError(f"{where}.fact.key: {sc.key!r} is not a count key of {sc.namespace}")
    if sc.value != sc.check["at_most"]:
        raise ProbeError(f"{where}.check.at_most: {sc.check['at_most']} but the learned value is {sc.value!r}")
    if sc.section != ns.section:
        raise ProbeError(f"{where}.section: {sc.section!r}, but {sc.namespace} binds to {ns.section!r}")


def scenario_table(scenarios: Iterable[Scenario]) -> pd.DataFrame:
    """One row per scenario: its kind, the learned value, its arms and what the checker expects."""
    return pd.DataFrame([{"scenario": s.id, "kind": s.kind,
                          "value": f"{s.namespace}.{s.key} = {s.value}" + (f" ({s.scope})" if s.scope != "user" else ""),
                          "arms": ", ".join(s.arms),
                          "expected": ", ".join(s.expect) or f"{s.check['measure']} ≤ {s.check['at_most']}"}
                         for s in scenarios])


# ------------------------------------------------------------------------------------ the wired tool


def select(sc: Scenario, store: Store, source: Source | None = None) -> list[str]:
    """The wired tool: reads the scenario's namespace through `Facts` (declared consumer) and selects ids."""
    consumers = Consumers({sc.tool: [sc.namespace]})
    facts = Facts(store, tool=sc.tool, consumers=consumers)
    attr, op = sc.rule["attr"], sc.rule["op"]
    if sc.member:
        members = facts.get(sc.namespace, default=frozenset())
        return [x["id"] for x in sc.items if (str(x[attr]).lower() in members) == (op == "member")]
    out = []
    for x in sc.items:
        scope_attr = sc.rule.get("scope_attr")
        limit = facts.get(sc.namespace, sc.key, sc.default, scope=f"sender:{x[scope_attr]}" if scope_attr else None)
        if OPS[op](x[attr], limit):
            out.append(x["id"])
    return out


class _learned_store:
    """An in-memory store holding the scenario's lesson in one representation, written through the gates."""

    def __init__(self, sc: Scenario, arm: str, source: Source):
        self.sc, self.arm, self.skill = sc, arm, source.skill(sc.domain)

    def __enter__(self) -> Store:
        self.store = Store.open(":memory:", research=True, auto_approve=True)
        sc = self.sc
        if self.arm == "tier0":
            kind, payload, scope = "fact", {"namespace": sc.namespace, "key": sc.key, "value": sc.value}, sc.scope
        elif self.arm == "tier2":
            payload = {"key": sc.namespace if sc.member else sc.key, "value": sc.key if sc.member else sc.value}
            if sc.scope != "user":
                payload["scope"] = sc.scope
            kind, scope = "parameter", "user"
        elif self.arm == "tier3":
            kind, payload, scope = "preference", {"body": sc.prose}, "user"
        else:
            return self.store
        result = gates.learn(self.store, self.skill, kind, payload, section=None if kind == "fact" else sc.section,
                             provenance="user_instruction", scope=scope)
        if result.outcome not in ("routed", "active"):
            raise ProbeError(f"scenario {sc.id}: the gates {result.outcome} the {self.arm} lesson ({result.message})")
        return self.store

    def __exit__(self, *_):
        self.store.close()


# ----------------------------------------------------------------------------------------- prompts


def prompts(sc: Scenario, arm: str, source: Source | None = None) -> list[dict]:
    """The chat messages of one arm: the effective skill as the system prompt, the task as the user turn."""
    source = source or load_source()
    skill = source.skill(sc.domain)
    with _learned_store(sc, arm, source) as store:
        system = resolve(skill, store if arm in ("tier2", "tier3") else None).text
        user = sc.task
        if sc.kind == "select":
            user += "\n\nItems:\n" + "\n".join(json.dumps(x, ensure_ascii=False) for x in sc.items)
            if arm == "tier0":
                user += (f"\n\nThe `{sc.tool}` tool has already applied the user's saved settings and selected: "
                         f"{json.dumps(select(sc, store, source))}")
            user += "\n\n" + ANSWER_FORMAT
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


# ----------------------------------------------------------------------------------------- checkers

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_LIST = re.compile(r"\[[^\[\]]*\]")
_ITEM = re.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+\S", re.MULTILINE)


def measure(text: str, what: str) -> int:
    """Deterministic counts: sentences (runs ending in . ! ?), words, or Markdown list items."""
    text = _THINK.sub("", text).strip()
    if what == "sentences":
        return len(re.findall(r"[^.!?\n]*[A-Za-z0-9][^.!?\n]*[.!?]+(?=\s|$)", text))
    if what == "words":
        return len(re.findall(r"[\w'’-]+", text))
    return len(_ITEM.findall(text))


def check(sc: Scenario, reply: str, expected: Sequence[str] = ()) -> tuple[bool, str]:
    """(passed, what was found) for one reply."""
    text = _THINK.sub("", reply).strip()
    if sc.kind == "text":
        n = measure(text, sc.check["measure"])
        return n <= sc.check["at_most"], f"{n} {sc.check['measure']} (limit {sc.check['at_most']})"
    for candidate in reversed(_LIST.findall(text)):
        try:
            got = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(got, list) and all(isinstance(g, str) for g in got):
            return set(got) == set(expected), json.dumps(sorted(set(got)))
    return False, "no JSON list of ids in the reply"


# --------------------------------------------------------------------------------------------- run


@dataclass(frozen=True)
class ArmResult:
    scenario: str
    kind: str  # select | text
    arm: str
    seed: int
    passed: bool | None  # None: this request was skipped
    expected: str
    got: str
    model: str
    replayed: bool
    note: str = ""


@dataclass(frozen=True)
class Power:
    """How many text scenarios the tier 2 vs tier 3 comparison needs to see `difference` in compliance.

    Two independent proportions, arcsine effect size (Cohen's h; what statsmodels' NormalIndPower and G*Power
    use): n per arm = ((z(1 − alpha/2) + z(power)) / h)². `baseline` 0.4 (vs 0.6) is the worst case — h is
    smallest for rates centred on 0.5 — so the figure holds whatever the model's compliance turns out to be.
    The arms share scenarios, so a paired analysis would need no more. The unit is the scenario: seeds of
    one scenario at temperature 0 are not independent replies.
    """

    have: int = 0  # text scenarios scored in both the tier-2 and the tier-3 arm
    available: int = 0  # text scenarios the run was given
    difference: float = 0.2
    alpha: float = 0.05
    power: float = 0.8
    baseline: float = 0.4

    @property
    def required(self) -> int:
        h = 2 * math.asin(math.sqrt(self.baseline + self.difference)) - 2 * math.asin(math.sqrt(self.baseline))
        z = NormalDist().inv_cdf
        return math.ceil(((z(1 - self.alpha / 2) + z(self.power)) / h) ** 2)

    @property
    def powered(self) -> bool:
        return self.have >= self.required

    def __str__(self) -> str:
        need = (f"a tier 2 − tier 3 compliance difference of {self.difference:g} needs {self.required} text "
                f"scenarios scored in both arms (two proportions, arcsine, alpha {self.alpha:g} two-sided, power "
                f"{self.power:g}, rates {self.baseline:g} vs {self.baseline + self.difference:g})")
        if not self.available:
            return need
        return need + f"; {self.have} of {self.available} were" + ("" if self.powered else
                                                                  " — underpowered, so no verdict")


@dataclass(frozen=True)
class ProbeRun:
    status: str  # ran | skipped
    reason: str
    model: str = ""
    results: tuple[ArmResult, ...] = ()
    text_scenarios: int = 0  # text scenarios asked for (both tier 2 and tier 3 among the arms)

    def table(self) -> pd.DataFrame:
        """One row per scenario × arm × seed (`passed` None: that request was skipped)."""
        return pd.DataFrame([r.__dict__ for r in self.results],
                            columns=[f.name for f in ArmResult.__dataclass_fields__.values()])

    def summary(self) -> pd.DataFrame:
        """Compliance per arm and scenario kind, with a Wilson 95% interval."""
        df = self.table()
        if df.empty or df.passed.isna().all():
            return pd.DataFrame(columns=["arm", "kind", "n", "passed", "rate", "low", "high"])
        df = df[df.passed.notna()]
        rows = []
        for (arm, kind), g in df.groupby(["arm", "kind"], sort=False):
            n, k = len(g), int(g.passed.sum())
            rows.append({"arm": arm, "kind": kind, "n": n, "passed": k, "rate": k / n,
                         "low": wilson_lower_bound(k, n), "high": 1 - wilson_lower_bound(n - k, n)})
        return pd.DataFrame(rows)

    def _paired(self) -> pd.DataFrame:
        """Text scenarios scored in both tier 2 and tier 3: each arm's pass rate over its seeds."""
        df = self.table()
        df = df[(df.kind == "text") & df.passed.notna() & df.arm.isin(["tier2", "tier3"])]
        if df.empty:
            return pd.DataFrame(columns=["tier2", "tier3"])
        return df.assign(passed=df.passed.astype(float)).pivot_table(
            index="scenario", columns="arm", values="passed", aggfunc="mean").dropna()

    @property
    def power(self) -> Power:
        return Power(have=len(self._paired()), available=self.text_scenarios)

    def compliance(self) -> tuple[Interval | None, str]:
        """(tier 2 − tier 3 pass rate on text scenarios, scenarios resampled; or None) and why it is None."""
        if self.status != "ran":
            return None, f"the live-model arm did not run ({self.reason})"
        if not self.power.powered:
            return None, str(self.power)
        paired = self._paired()
        return mean_ci((paired.tier2 - paired.tier3).to_numpy(), n_resamples=2000, seed=0), ""

    def finding(self) -> str:
        """What the live arm shows, from `compliance()` — no verdict without the power to reach one."""
        if self.status != "ran":
            return f"Live-model arm skipped: {self.reason}. {self.power}."
        comp, why = self.compliance()
        head = f"Live-model arm on {self.model} ({self.reason}). "
        if comp is None:
            return head + why + "."
        d = self.power.difference
        say = ("the typed line is followed more often" if comp.low > 0 else
               "the prose line is followed more often" if comp.high < 0 else
               f"no difference shown, and one of {d:g} or more in favour of the typed line is ruled out"
               if comp.high < d else "no difference shown")
        return (head + f"Compliance tier 2 − tier 3 on {comp.n} text scenarios: {comp.estimate:+.0%} "
                f"(95% CI {comp.low:+.0%} to {comp.high:+.0%}, scenarios resampled): {say}.")

    def __str__(self) -> str:
        if self.status == "skipped":
            return f"live-model arm skipped: {self.reason}"
        return f"live-model arm ran on {self.model}: {len(self.results)} replies ({self.reason})"


def _pick_model(client: LemonadeClient, health) -> str | None:
    wanted = os.environ.get("OVERLAY_KIT_MODEL")
    if wanted:
        return wanted
    loaded = [m for m, _ in health.loaded if m]
    if loaded:
        return loaded[0]
    models = [m for m in client.models() if m.downloaded is not False]
    default = next((m.id for m in models if m.id == "Gemma-4-E4B-it-GGUF"), None)
    return default or (models[0].id if models else None)


def run(client: LemonadeClient | None = None, *, model: str | None = None, scenarios: Iterable[Scenario] | None = None,
        arms: Sequence[str] = ARMS, seeds: Sequence[int] = (0,), max_tokens: int = 400,
        source: Source | None = None) -> ProbeRun:
    """Run every scenario × arm × seed at temperature 0. Returns a skipped run, with its reason, when no
    server answers (or, in replay mode, when the cassette holds none of the requests)."""
    source = source or load_source()
    scenarios = tuple(scenarios) if scenarios is not None else load_scenarios(source=source)
    text = sum(sc.kind == "text" for sc in scenarios) if {"tier2", "tier3"} <= set(arms) else 0
    own = client is None
    client = client or LemonadeClient(retries=0)
    try:
        return replace(_run(client, model, scenarios, arms, seeds, max_tokens, source), text_scenarios=text)
    finally:
        if own:
            client.close()


def _run(client: LemonadeClient, model: str | None, scenarios: tuple[Scenario, ...], arms: Sequence[str],
         seeds: Sequence[int], max_tokens: int, source: Source) -> ProbeRun:
    if client.mode != "replay":
        health = client.health(read_timeout_s=3.0)
        if not health.up:
            return ProbeRun("skipped", f"no model server answered at {client.base_url}"
                                       + (" (busy)" if health.busy else ""))
        try:
            model = model or _pick_model(client, health)
        except LLMError as exc:
            return ProbeRun("skipped", f"the server at {client.base_url} lists no models: {exc}")
        if not model:
            return ProbeRun("skipped", f"the server at {client.base_url} has no downloaded model")
    model = model or os.environ.get("OVERLAY_KIT_MODEL") or "Gemma-4-E4B-it-GGUF"
    results = []
    for sc in scenarios:
        with _learned_store(sc, "tier0", source) as store:
            expected = select(sc, store, source) if sc.kind == "select" else []
        for arm in (a for a in arms if a in sc.arms):
            messages = prompts(sc, arm, source)
            for seed in seeds:
                try:
                    reply = client.chat(model, messages, max_completion_tokens=max_tokens, temperature=0.0,
                                        seed=seed)
                except Skipped as exc:
                    results.append(ArmResult(sc.id, sc.kind, arm, seed, None, json.dumps(sorted(expected)), "",
                                             model, False, exc.reason))
                    continue
                passed, got = check(sc, reply.content, expected)
                results.append(ArmResult(sc.id, sc.kind, arm, seed, passed, json.dumps(sorted(expected)), got,
                                         reply.model or model, reply.replayed,
                                         "cut off at max_tokens" if reply.truncated else ""))
    ran = [r for r in results if r.passed is not None]
    if not ran:
        reason = results[0].note if results else "no scenarios"
        return ProbeRun("skipped", reason, model, tuple(results))
    how = "replayed from a cassette" if all(r.replayed for r in ran) else "live"
    return ProbeRun("ran", f"{how}; {len(results) - len(ran)} request(s) skipped", model, tuple(results))
