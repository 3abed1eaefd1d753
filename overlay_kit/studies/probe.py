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
Checkers are deterministic: a JSON list of ids compared as a set, or a measured property of the reply —
sentences / words / list items counted against a learned count, the reply's language or list style against a
learned enumeration, every list item carrying a learned marker for a boolean.

The unit is the *key* — one learned value, `namespace.key` (a member namespace such as `priority_senders` is
one key, whatever member a scenario uses): scenarios of one key share the value and its wording, so they are
not independent. Each scenario names its key's value `shape` (count, enumeration, boolean, threshold, sender,
duration, person — checked against the vocabulary). `ProbeRun.compliance()` averages tier 2 − tier 3 per key
and resamples keys; `Power` states the power in keys (the smallest difference the keys can detect) and the
comparison gives no verdict below the keys its pre-stated difference needs.

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
from .finding import Finding, render
from .lessons import RULE, Source, load_source

__all__ = [
    "ARMS",
    "DEFAULT_SCENARIOS",
    "SHAPES",
    "ArmResult",
    "Power",
    "ProbeError",
    "ProbeRun",
    "Scenario",
    "check",
    "clustered_difference",
    "load_scenarios",
    "measure",
    "observe",
    "prompts",
    "run",
    "scenario_table",
]

DEFAULT_SCENARIOS = dataset_path("lessons", "scenarios.yaml")
ARMS = ("control", "tier2", "tier3", "tier0")
OPS: Mapping[str, Callable[[Any, Any], bool]] = {
    "greater": lambda a, b: a > b,
    "at_least": lambda a, b: a >= b,
    "less": lambda a, b: a < b,
    "at_most": lambda a, b: a <= b,
    "not_before": lambda a, b: str(a) >= str(b),
    "equals": lambda a, b: str(a).lower() == str(b).lower(),  # an enumeration: the item has the learned option
    "requires": lambda a, b: bool(a) or not b,
}  # a boolean: when the learned flag is on, the item needs `attr`
MEMBER_OPS = ("member", "not_member")
# value shape of a key (the vocabulary's `KeySpec.shape`) -> the select rules that can express it
SHAPE_OPS: Mapping[str, tuple[str, ...]] = {
    "count": ("greater", "at_least", "less", "at_most"),
    "duration": ("greater", "at_least", "less", "at_most"),
    "threshold": ("greater", "at_least", "less", "at_most", "not_before"),
    "enumeration": ("equals", *MEMBER_OPS),
    "boolean": ("requires",),
    "sender": MEMBER_OPS,
    "person": MEMBER_OPS,
}
SHAPES = tuple(SHAPE_OPS)
# text scenarios: value shape -> the measures that check it (counts: at_most; enumerations: equals; booleans:
# every list item matches `pattern`)
TEXT_MEASURES: Mapping[str, tuple[str, ...]] = {
    "count": ("sentences", "words", "list_items"),
    "enumeration": ("language", "list_style"),
    "boolean": ("items_matching",),
}
MEASURES = TEXT_MEASURES["count"]
ANSWER_FORMAT = 'Answer with only a JSON list of the item ids, for example ["x1", "x2"], and nothing else.'


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
    shape: str = ""  # the key's value shape, as the vocabulary (source.yaml) has it

    @property
    def kind(self) -> str:
        return "select" if self.tool else "text"

    @property
    def arms(self) -> tuple[str, ...]:
        return ARMS if self.kind == "select" else ARMS[:3]

    @property
    def member(self) -> bool:
        return self.rule.get("op") in MEMBER_OPS

    @property
    def unit(self) -> str:
        """The independent unit: `domain/namespace.key`; a member namespace is one key (`domain/namespace`),
        whichever member the scenario teaches — its members share the rule and its wording."""
        return f"{self.domain}/{self.namespace}" if self.member else f"{self.domain}/{self.namespace}.{self.key}"


def load_scenarios(path: str | Path = DEFAULT_SCENARIOS, source: Source | None = None) -> tuple[Scenario, ...]:
    """Read and check the scenarios: known domain, namespace, key and section, the key's value shape, a tool
    that could read the namespace (select) or a check the shape allows (text), `expect` equal to what the
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
            sc = Scenario(
                raw["id"],
                raw["domain"],
                raw["section"],
                fact["namespace"],
                str(fact["key"]),
                fact["value"],
                fact.get("scope", "user"),
                raw["prose"],
                " ".join(raw["task"].split()),
                raw.get("default"),
                raw.get("tool"),
                dict(raw.get("rule") or {}),
                tuple(dict(x) for x in raw.get("items") or ()),
                tuple(raw.get("expect") or ()),
                dict(raw.get("check") or {}),
                raw["shape"],
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ProbeError(f"{where}: missing or malformed field {exc}") from exc
        if sc.domain not in source.domains:
            raise ProbeError(f"{where}.domain: {sc.domain!r} is not a corpus domain")
        ns = source.namespace(sc.domain, sc.namespace)  # raises CorpusError when unknown
        spec = ns.spec(sc.key)
        if spec is None:
            raise ProbeError(f"{where}.fact.key: {sc.key!r} is not a key of {sc.namespace}")
        if sc.shape != spec.shape or sc.shape not in SHAPES:
            raise ProbeError(
                f"{where}.shape: {sc.shape!r}, but {sc.namespace}.{sc.key} has shape {spec.shape!r}"
                + ("" if spec.shape in SHAPES else f" (scenario shapes: {', '.join(SHAPES)})")
            )
        if sc.section != ns.section:
            raise ProbeError(f"{where}.section: {sc.section!r}, but {sc.namespace} binds to {ns.section!r}")
        if sc.kind == "select":
            _check_select(sc, spec, source, where)
        else:
            _check_text(sc, spec, source, where)
        if sc.id in {o.id for o in out}:
            raise ProbeError(f"{where}.id: {sc.id!r} is used twice")
        out.append(sc)
    return tuple(out)


def _check_select(sc: Scenario, spec, source: Source, where: str) -> None:
    """A select scenario: a tool that could read the namespace, a rule its shape allows, and `expect`."""
    op = sc.rule.get("op")
    if op not in OPS and not sc.member:
        raise ProbeError(f"{where}.rule.op: {op!r} is not one of {', '.join([*OPS, *MEMBER_OPS])}")
    if op not in SHAPE_OPS[sc.shape]:
        raise ProbeError(
            f"{where}.rule.op: {op!r} cannot express a {sc.shape} value (use {', '.join(SHAPE_OPS[sc.shape])})"
        )
    if sc.member != (spec.key is None):
        raise ProbeError(
            f"{where}.rule.op: {op!r}, but {sc.namespace} is "
            + ("a member namespace" if spec.key is None else "not a member namespace")
        )
    if sc.shape == "enumeration" and not sc.member and sc.value not in set(spec.options.values()):
        raise ProbeError(
            f"{where}.fact.value: {sc.value!r} is not an option of {sc.namespace}.{sc.key} "
            f"({', '.join(sorted(set(spec.options.values())))})"
        )
    if sc.tool not in source.registry.could_read(sc.namespace, sc.domain):
        raise ProbeError(f"{where}.tool: {sc.tool!r} does not read {sc.namespace} in the registry model")
    if not sc.items or any("id" not in x or sc.rule.get("attr") not in x for x in sc.items):
        raise ProbeError(f"{where}.items: every item needs an id and the rule's attr")
    with Store.open(":memory:") as empty:
        control = select(sc, empty, source)
    with _learned_store(sc, "tier0", source) as store:
        learned = select(sc, store, source)
    if not sc.expect:
        raise ProbeError(f"{where}.expect: write the ids the learned value selects by hand")
    if set(sc.expect) != set(learned):
        raise ProbeError(f"{where}.expect: {sorted(sc.expect)} but the wired tool selects {sorted(learned)}")
    if set(control) == set(learned):
        raise ProbeError(f"{where}: the learned value does not change the answer; the checker could not fail")


def _check_text(sc: Scenario, spec, source: Source, where: str) -> None:
    """A text scenario stands for a leftover lesson: a value no tool could read, and the check measures it —
    a count (`at_most` = the learned count), an enumeration (`equals` = the learned option) or a boolean
    (every list item matches `pattern`; the learned flag is on)."""
    ns = source.namespace(sc.domain, sc.namespace)
    if not ns.why_no_tool:
        raise ProbeError(
            f"{where}.fact.namespace: a tool could read {sc.namespace!r}; text scenarios test values no tool can read"
        )
    measures = TEXT_MEASURES.get(sc.shape, ())
    what = sc.check.get("measure")
    if what not in measures:
        raise ProbeError(
            f"{where}.check: needs measure in {measures or '()'} for a {sc.shape} value"
            + ("" if measures else " (no text check measures this shape)")
        )
    if sc.shape == "count":
        if not isinstance(sc.check.get("at_most"), int):
            raise ProbeError(f"{where}.check: needs measure in {measures} and an integer at_most")
        if sc.value != sc.check["at_most"]:
            raise ProbeError(f"{where}.check.at_most: {sc.check['at_most']} but the learned value is {sc.value!r}")
    elif sc.shape == "enumeration":
        options = set(spec.options.values())
        if sc.value not in options:
            raise ProbeError(
                f"{where}.fact.value: {sc.value!r} is not an option of {sc.namespace}.{sc.key} "
                f"({', '.join(sorted(options))})"
            )
        if sc.check.get("equals") != sc.value:
            raise ProbeError(f"{where}.check.equals: {sc.check.get('equals')!r} but the learned value is {sc.value!r}")
        if what == "language" and sc.value not in LANGUAGES:
            raise ProbeError(f"{where}.check: no language measure for {sc.value!r} ({', '.join(LANGUAGES)})")
        if what == "list_style" and sc.value not in LIST_STYLES:
            raise ProbeError(f"{where}.check: list_style is one of {', '.join(LIST_STYLES)}")
    else:  # boolean
        if sc.value is not True:
            raise ProbeError(
                f"{where}.fact.value: a boolean text scenario teaches the flag on (true); got {sc.value!r}"
            )
        try:
            re.compile(sc.check.get("pattern") or "")
        except (re.error, TypeError) as exc:
            raise ProbeError(f"{where}.check.pattern: {exc}") from exc
        if not sc.check.get("pattern"):
            raise ProbeError(f"{where}.check.pattern: a boolean check needs the pattern every list item matches")


def _expected_text(sc: Scenario) -> str:
    c = sc.check
    if sc.shape == "count":
        return f"{c['measure']} ≤ {c['at_most']}"
    if sc.shape == "enumeration":
        return f"{c['measure']} = {c['equals']}"
    return f"every list item ~ /{c['pattern']}/"


def scenario_table(scenarios: Iterable[Scenario]) -> pd.DataFrame:
    """One row per scenario: its kind, key and value shape, the learned value, its arms and what the checker
    expects."""
    return pd.DataFrame(
        [
            {
                "scenario": s.id,
                "kind": s.kind,
                "key": s.unit,
                "shape": s.shape,
                "value": f"{s.namespace}.{s.key} = {s.value}" + (f" ({s.scope})" if s.scope != "user" else ""),
                "arms": ", ".join(s.arms),
                "expected": ", ".join(s.expect) or _expected_text(s),
            }
            for s in scenarios
        ]
    )


# ------------------------------------------------------------------------------------ the wired tool


def select(sc: Scenario, store: Store, source: Source | None = None) -> list[str]:
    """The wired tool: reads the scenario's namespace through `Facts` (declared consumer) and selects ids."""
    consumers = Consumers({sc.tool: [sc.namespace]})
    facts = Facts(store, tool=sc.tool, consumers=consumers)
    attr, op = sc.rule["attr"], sc.rule["op"]
    if sc.member:
        members = {m.lower() for m in facts.get(sc.namespace, default=frozenset())}
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
        result = gates.learn(
            self.store,
            self.skill,
            kind,
            payload,
            section=None if kind == "fact" else sc.section,
            provenance="user_instruction",
            scope=scope,
        )
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
                user += (
                    f"\n\nThe `{sc.tool}` tool has already applied the user's saved settings and selected: "
                    f"{json.dumps(select(sc, store, source))}"
                )
            user += "\n\n" + ANSWER_FORMAT
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


# ----------------------------------------------------------------------------------------- checkers

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_LIST = re.compile(r"\[[^\[\]]*\]")
_ITEM = re.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+\S", re.MULTILINE)
_ITEM_LINE = re.compile(r"^(?P<indent>[ \t]*)(?P<marker>[-*•+]|\d+[.)])[ \t]+(?P<body>\S.*)$", re.MULTILINE)
_FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[ \t]*$", re.DOTALL | re.MULTILINE)
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
# Function words that are frequent in one language and rare in the others (a word shared by two languages
# counts for both, so only the distinctive ones decide). The measure needs no model and no download.
LANGUAGES: Mapping[str, frozenset[str]] = {
    "english": frozenset(
        "the and is are of to in that it for with this you your we be not have will on can "
        "would should please thanks".split()
    ),
    "german": frozenset(
        "der die das und ist nicht ich sie wir ein eine einen mit für auf zu den dem des "
        "bitte danke auch wird sind haben oder aber noch wie".split()
    ),
    "spanish": frozenset(
        "el la los las y es no que de en un una por con para del al se lo muy pero también gracias está son".split()
    ),
    "french": frozenset(
        "le la les et est ne pas que de des un une pour avec dans sur du au vous nous je il "
        "merci aussi sont être".split()
    ),
    "portuguese": frozenset(
        "os é não que de em um uma por com para da dos das também obrigado você está são isso".split()
    ),
}
LIST_STYLES = ("numbered", "bulleted")


def _prose(text: str) -> str:
    """The reply without a reasoning block."""
    return _THINK.sub("", text).strip()


def _items(text: str) -> list[re.Match]:
    """Top-level Markdown list items (the least indented), outside code fences."""
    found = list(_ITEM_LINE.finditer(_FENCE.sub("", _prose(text))))
    if not found:
        return []
    top = min(len(m["indent"].expandtabs(4)) for m in found)
    return [m for m in found if len(m["indent"].expandtabs(4)) == top]


def measure(text: str, what: str) -> int:
    """Deterministic counts: sentences (runs ending in . ! ?), words, or Markdown list items."""
    text = _prose(text)
    if what == "sentences":
        return len(re.findall(r"[^.!?\n]*[A-Za-z0-9][^.!?\n]*[.!?]+(?=\s|$)", text))
    if what == "words":
        return len(re.findall(r"[\w'’-]+", text))
    return len(_ITEM.findall(text))


def language(text: str) -> str:
    """The language of a reply: the one whose function words occur most often (code fences left out);
    `unknown` when none occurs or two tie."""
    words = [w.lower() for w in _WORD.findall(_FENCE.sub("", _prose(text)))]
    hits = sorted(((sum(w in vocab for w in words), lang) for lang, vocab in LANGUAGES.items()), reverse=True)
    return hits[0][1] if hits[0][0] > 0 and hits[0][0] > hits[1][0] else "unknown"


def list_style(text: str) -> str:
    """`numbered` or `bulleted` when every top-level list item is; `mixed` when both occur; `none` without items."""
    kinds = {"numbered" if m["marker"][0].isdigit() else "bulleted" for m in _items(text)}
    return kinds.pop() if len(kinds) == 1 else "mixed" if kinds else "none"


def items_matching(text: str, pattern: str) -> tuple[int, int]:
    """(top-level list items whose text matches `pattern`, all top-level items); case-insensitive, searched
    in the item's text with Markdown emphasis and code ticks removed."""
    items = [re.sub(r"[*_`]", "", m["body"]).strip() for m in _items(text)]
    return sum(bool(re.search(pattern, x, re.IGNORECASE)) for x in items), len(items)


def observe(sc: Scenario, reply: str) -> tuple[bool, str]:
    """(passed, what was measured) for a text scenario's reply."""
    c = sc.check
    if c["measure"] in MEASURES:
        n = measure(reply, c["measure"])
        return n <= c["at_most"], f"{n} {c['measure']} (limit {c['at_most']})"
    if c["measure"] == "language":
        got = language(reply)
        return got == c["equals"], f"language {got} (learned {c['equals']})"
    if c["measure"] == "list_style":
        got = list_style(reply)
        return got == c["equals"], f"list style {got} (learned {c['equals']})"
    k, n = items_matching(reply, c["pattern"])
    return n > 0 and k == n, f"{k} of {n} list items marked"


def check(sc: Scenario, reply: str, expected: Sequence[str] = ()) -> tuple[bool, str]:
    """(passed, what was found) for one reply."""
    text = _prose(reply)
    if sc.kind == "text":
        return observe(sc, text)
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
    key: str = ""  # the scenario's unit (`Scenario.unit`): what the compliance interval resamples
    shape: str = ""


@dataclass(frozen=True)
class Power:
    """The power of the tier 2 vs tier 3 comparison, in keys — the independent unit.

    Two proportions compared with the arcsine effect size h = 2·asin√p₂ − 2·asin√p₃ (Cohen's h; what
    statsmodels' NormalIndPower and G*Power use): each arm's transformed rate has variance 1/n, so n keys per
    arm detect h = (z(1 − α/2) + z(power)) · √(2/n), and a difference `difference` needs
    n = 2 · ((z(1 − α/2) + z(power)) / h)² keys. Worst cases, so the figures hold whatever the model does:

    * each key counts once — all scenarios of a key may agree (at temperature 0 they share the value, its
      wording and the model), so more scenarios per key buy nothing the calculation can rely on;
    * rates centred on 0.5 (`baseline` = 0.5 − difference/2), where h is smallest for a given difference —
      the minimum detectable difference (`detectable`, `mde`) is then sin(h/2);
    * the two arms taken as independent: both arms score the same keys, and a positive correlation between
      them (a key hard for one representation is hard for the other) only makes the paired comparison stronger.

    The pre-stated difference is the rule file's `live_difference`, 0.3 (43 keys): 0.2 would need 97, more keys than the whole vocabulary
    (source.yaml) holds, so no scenario file could power it (tests/test_probe.py checks both).
    """

    have: int = 0  # keys with a scenario scored in both the tier-2 and the tier-3 arm
    available: int = 0  # keys the run was given (with both tier 2 and tier 3 among its arms)
    difference: float = field(default_factory=lambda: float(RULE.file.param("live_difference")))
    alpha: float = 0.05
    power: float = 0.8
    baseline: float | None = None  # the lower of the two rates; None: 0.5 − difference/2 (the worst case)

    def __post_init__(self):
        if self.baseline is None:
            object.__setattr__(self, "baseline", 0.5 - self.difference / 2)

    @property
    def _z(self) -> float:
        z = NormalDist().inv_cdf
        return z(1 - self.alpha / 2) + z(self.power)

    @property
    def required(self) -> int:
        """Keys per arm that `difference` (at rates `baseline` vs `baseline + difference`) needs."""
        h = 2 * math.asin(math.sqrt(self.baseline + self.difference)) - 2 * math.asin(math.sqrt(self.baseline))
        return math.ceil(2 * (self._z / h) ** 2)

    def detectable(self, keys: int) -> float:
        """The minimum detectable difference with `keys` keys per arm (rates centred on 0.5); inf when even a
        difference of 1 is out of reach."""
        if keys <= 0:
            return math.inf
        h = self._z * math.sqrt(2 / keys)
        return math.sin(h / 2) if h <= math.pi else math.inf

    @property
    def mde(self) -> float:
        """The minimum detectable difference with the keys scored in both arms."""
        return self.detectable(self.have)

    @property
    def powered(self) -> bool:
        return self.have >= self.required

    def __str__(self) -> str:
        how = (
            f"two proportions, arcsine, alpha {self.alpha:g} two-sided, power {self.power:g}, rates "
            f"{self.baseline:g} vs {self.baseline + self.difference:g}, each key one observation"
        )
        need = (
            f"a tier 2 − tier 3 compliance difference of {self.difference:g} needs {self.required} keys "
            f"scored in both arms ({how})"
        )
        if not self.available:
            return need
        return (
            need + f"; the run was given {self.available} keys (smallest detectable difference "
            f"{self.detectable(self.available):.2f}), {self.have} were scored in both arms"
            + (f" (smallest detectable difference {self.mde:.2f})" if self.have else "")
            + ("" if self.powered else " — underpowered, so no verdict")
        )


def clustered_difference(paired: pd.DataFrame, *, by: str = "key", n_resamples: int = 2000, seed: int = 0) -> Interval:
    """Mean over `by` groups of the group's mean tier 2 − tier 3 difference, resampling groups.

    `paired` holds one row per scenario with its `tier2` and `tier3` pass rates and its key; each key weighs
    the same whatever its number of scenarios, and the bootstrap draws keys, never scenarios of a key apart."""
    per_key = (paired.tier2 - paired.tier3).groupby(paired[by], sort=True).mean()
    return mean_ci(per_key.to_numpy(), n_resamples=n_resamples, seed=seed)


@dataclass(frozen=True)
class ProbeRun:
    status: str  # ran | skipped
    reason: str
    model: str = ""
    results: tuple[ArmResult, ...] = ()
    keys: int = 0  # keys asked for with both tier 2 and tier 3 among the arms

    def table(self) -> pd.DataFrame:
        """One row per scenario × arm × seed (`passed` None: that request was skipped)."""
        return pd.DataFrame(
            [r.__dict__ for r in self.results], columns=[f.name for f in ArmResult.__dataclass_fields__.values()]
        )

    def summary(self, by: str = "kind") -> pd.DataFrame:
        """Compliance per arm and scenario `kind` (or `shape`), with a Wilson 95% interval over replies."""
        df = self.table()
        if df.empty or df.passed.isna().all():
            return pd.DataFrame(columns=["arm", by, "n", "passed", "rate", "low", "high"])
        df = df[df.passed.notna()]
        rows = []
        for (arm, kind), g in df.groupby(["arm", by], sort=False):
            n, k = len(g), int(g.passed.sum())
            rows.append(
                {
                    "arm": arm,
                    by: kind,
                    "n": n,
                    "passed": k,
                    "rate": k / n,
                    "low": wilson_lower_bound(k, n),
                    "high": 1 - wilson_lower_bound(n - k, n),
                }
            )
        return pd.DataFrame(rows)

    def _paired(self) -> pd.DataFrame:
        """Scenarios scored in both tier 2 and tier 3: each arm's pass rate over its seeds, and the key."""
        df = self.table()
        df = df[df.passed.notna() & df.arm.isin(["tier2", "tier3"])]
        if df.empty:
            return pd.DataFrame(columns=["key", "tier2", "tier3"])
        return (
            df.assign(passed=df.passed.astype(float))
            .pivot_table(index=["key", "scenario"], columns="arm", values="passed", aggfunc="mean")
            .dropna()
            .reset_index()
        )

    @property
    def power(self) -> Power:
        return Power(have=self._paired().key.nunique(), available=self.keys)

    def compliance(self) -> tuple[Interval | None, str]:
        """(tier 2 − tier 3 pass rate, averaged per key, keys resampled; or None) and why it is None."""
        if self.status != "ran":
            return None, f"the live-model arm did not run ({self.reason})"
        if not self.power.powered:
            return None, str(self.power)
        return clustered_difference(self._paired()), ""

    def finding(self) -> str:
        """What the live arm shows, from `compliance()` — no verdict without the power to reach one."""
        if self.status != "ran":
            return f"Live-model arm skipped: {self.reason}. {self.power}."
        comp, why = self.compliance()
        head = f"Live-model arm on {self.model} ({self.reason}). "
        if comp is None:
            return head + why + "."
        power, d = self.power, self.power.difference
        say = (
            "the typed line is followed more often"
            if comp.low > 0
            else "the prose line is followed more often"
            if comp.high < 0
            else f"no difference shown, and one of {d:g} or more in favour of the typed line is ruled out"
            if comp.high < d
            else "no difference shown"
        )
        return render(
            [
                Finding.of(
                    f"Compliance tier 2 − tier 3 on {comp.n} keys ({len(self._paired())} scenarios)",
                    comp,
                    verdict=say,
                    note=f"keys resampled; smallest detectable difference at {comp.n} keys {power.mde:.2f}",
                    spec="+.0%",
                )
            ],
            intro=head.strip(),
            joiner="",
            outro=".",
        )

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


def run(
    client: LemonadeClient | None = None,
    *,
    model: str | None = None,
    scenarios: Iterable[Scenario] | None = None,
    arms: Sequence[str] = ARMS,
    seeds: Sequence[int] = (0,),
    max_tokens: int = 400,
    source: Source | None = None,
) -> ProbeRun:
    """Run every scenario × arm × seed at temperature 0. Returns a skipped run, with its reason, when no
    server answers (or, in replay mode, when the cassette holds none of the requests)."""
    source = source or load_source()
    scenarios = tuple(scenarios) if scenarios is not None else load_scenarios(source=source)
    keys = len({sc.unit for sc in scenarios}) if {"tier2", "tier3"} <= set(arms) else 0
    own = client is None
    client = client or LemonadeClient(retries=0)
    try:
        return replace(_run(client, model, scenarios, arms, seeds, max_tokens, source), keys=keys)
    finally:
        if own:
            client.close()


def _run(
    client: LemonadeClient,
    model: str | None,
    scenarios: tuple[Scenario, ...],
    arms: Sequence[str],
    seeds: Sequence[int],
    max_tokens: int,
    source: Source,
) -> ProbeRun:
    if client.mode != "replay":
        health = client.health(read_timeout_s=3.0)
        if not health.up:
            return ProbeRun(
                "skipped", f"no model server answered at {client.base_url}" + (" (busy)" if health.busy else "")
            )
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
                    reply = client.chat(model, messages, max_completion_tokens=max_tokens, temperature=0.0, seed=seed)
                except Skipped as exc:
                    results.append(
                        ArmResult(
                            sc.id,
                            sc.kind,
                            arm,
                            seed,
                            None,
                            json.dumps(sorted(expected)),
                            "",
                            model,
                            False,
                            exc.reason,
                            sc.unit,
                            sc.shape,
                        )
                    )
                    continue
                passed, got = check(sc, reply.content, expected)
                results.append(
                    ArmResult(
                        sc.id,
                        sc.kind,
                        arm,
                        seed,
                        passed,
                        json.dumps(sorted(expected)),
                        got,
                        reply.model or model,
                        reply.replayed,
                        "cut off at max_tokens" if reply.truncated else "",
                        sc.unit,
                        sc.shape,
                    )
                )
    ran = [r for r in results if r.passed is not None]
    if not ran:
        reason = results[0].note if results else "no scenarios"
        return ProbeRun("skipped", reason, model, tuple(results))
    how = "replayed from a cassette" if all(r.replayed for r in ran) else "live"
    return ProbeRun("ran", f"{how}; {len(results) - len(ran)} request(s) skipped", model, tuple(results))
