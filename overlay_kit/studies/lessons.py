"""The tier-2 collapse probe: what users teach agents, where each lesson should live, and what wiring buys.

The design's open question 3 (seed: "Why v1 ships three tiers"): *if a learned value can be read by a tool it
is tier 0; if it cannot, prose is the only thing that can carry it; tier 2 is tier 0 for tools not yet wired
plus a rendering convention.* This module holds the machinery to answer it from data:

* **the source** (`load_source`): value vocabulary (`Namespace`, `KeySpec`: shape, unit, options, cue words,
  the section a tier-2 line binds to), the agent tool registry model (`ToolSpec`: the namespaces a tool could
  read — its `learns_from` once wired — and those the shipped agent already reads) and lesson templates;
* **the corpus** (`build_corpus` → `datasets/lessons/lessons.csv`, `load_corpus`): user corrections with
  gold representations — tier-0 fact, tier-1 tool hint, tier-2 typed value bound to a section, tier-3 prose;
* **the write-site router** (`route`, `ROUTE_RULES`): the capturing tool declares the tier — a preference
  setter is tier 0 *if a wired tool reads its namespace* (else the fact would be inert), a named tool is a
  tier-1 prior, a multi-clause procedure is prose, a single value goes to tier 0 or 2 by wiring;
* **the value-shape extractor** (`extract`): durations, counts, thresholds, sender/person scopes,
  enumerations, booleans → `ExtractedValue{namespace, key, value, scope}`; scored by `evaluate` (confusion
  matrices against the gold labels);
* **the registry model** (`Registry`): per-tool wiring switches, `consumers()` bridges to `facts.report`;
* **the collapse curve** (`collapse_curve`, `residual`): wire tools one at a time — what share still needs
  tier 2, and what remains with every plausibly wireable tool wired;
* **resident-token cost** of each representation (`representation_costs`), counted with the bundled Llama
  tokenizer on exactly the text `resolve` would render;
* **the wirings** compared (`wirings`): shipped, gate-allowed (no tool the gates' `write_path_tool` rule
  forbids — `write_path_tools` asks the gate itself) and all wired;
* **the study** (`run` → `CollapseStudy`): `.table()` holds every number with its 95% interval (coverage
  resamples namespaces, accuracy templates), `.finding()` applies `RULE` (a `DecisionRule` stated before the
  data) to them: holds, does not hold, or undecided.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
import re
import string
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pandas as pd
import yaml

from .. import budget, gates
from ..anchor import Anchor, parse
from ..facts import Consumers, report
from ..grammar import SECTION_LABEL, Delta, item_text
from ..metrics import Interval, ratio_ci
from ..resources import dataset_path, datasets_root
from ..skill import load_skill
from ..store import Store
from . import rulefile
from .finding import Finding, render
from .rulefile import RuleFile

__all__ = [
    "CAPTURES",
    "DEFAULT_CORPUS",
    "DEFAULT_SOURCE",
    "ROUTE_RULES",
    "RULE",
    "SHAPES",
    "TIER_KINDS",
    "WIRINGS",
    "CollapseStudy",
    "CorpusError",
    "DecisionRule",
    "Evaluation",
    "ExtractedValue",
    "KeySpec",
    "LabelledLesson",
    "Namespace",
    "Registry",
    "Route",
    "Source",
    "ToolSpec",
    "bootstrap",
    "build_corpus",
    "collapse_curve",
    "confusion",
    "cost_summary",
    "evaluate",
    "extract",
    "inert_check",
    "load_corpus",
    "load_source",
    "needs_tier2",
    "representation_costs",
    "residual",
    "route",
    "run",
    "study",
    "tool_table",
    "wirings",
    "write_corpus",
    "write_path_tools",
]

ROOT = datasets_root().parent  # skill_dir values in source.yaml are written from here ("datasets/...")
DEFAULT_SOURCE = dataset_path("lessons", "source.yaml")
DEFAULT_CORPUS = dataset_path("lessons", "lessons.csv")
SHAPES = ("duration", "count", "threshold", "sender", "person", "enumeration", "boolean", "none")
TIER_KINDS = MappingProxyType({0: "fact", 1: "tool-hint", 2: "parameter", 3: "preference"})
CAPTURES = ("setter", "remember")
MEMBER_SHAPES = MappingProxyType({"sender": "sender", "person": "person", "weekday": "enumeration", "path": "person"})
UNITS = MappingProxyType(
    {
        "duration": ("seconds", "minutes", "hours", "days", "years"),
        "threshold": ("time", "percent", "number", "year", "seconds"),
    }
)
COLUMNS = (
    "lesson_id",
    "template",
    "split",
    "domain",
    "skill",
    "section",
    "capture",
    "text",
    "gold_tier",
    "gold_kind",
    "shape",
    "namespace",
    "key",
    "value",
    "scope",
    "consumers",
    "prefer",
    "drop",
    "prose",
)


class CorpusError(ValueError):
    """The lesson source or corpus is malformed; the message names the file and the field or line."""


# ------------------------------------------------------------------------------------------- source


@dataclass(frozen=True)
class KeySpec:
    """One learnable value: its shape, unit (durations/thresholds), options (enumerations) and cue words."""

    namespace: str
    key: str | None  # None: a member namespace, whose keys are the members themselves
    shape: str
    cues: tuple[str, ...]
    unit: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    scopes: tuple[str, ...] = ()
    members: str | None = None  # sender | person | weekday | path
    member_value: str | None = None  # e.g. path_owners: key = path, value = a person


@dataclass(frozen=True)
class Namespace:
    name: str
    domain: str
    section: str
    keys: tuple[KeySpec, ...]
    why_no_tool: str | None = None

    def spec(self, key: str) -> KeySpec | None:
        for k in self.keys:
            if k.key is None or k.key == key:
                return k
        return None


@dataclass(frozen=True)
class ToolSpec:
    """A tool of the modelled agent. `reads`: namespaces it could read once wired (its `learns_from`);
    `wired`: those the shipped agent already reads; `writes`: the namespace a preference setter stores."""

    name: str
    domain: str
    reads: frozenset[str] = frozenset()
    wired: frozenset[str] = frozenset()
    writes: str | None = None
    why: str = ""

    @property
    def id(self) -> str:
        return f"{self.domain}/{self.name}"


@dataclass(frozen=True)
class Registry:
    """The agent tool registry model with per-tool wiring switches. Immutable: `wire` returns a new one."""

    tools: tuple[ToolSpec, ...]
    wiring: frozenset[tuple[str, str]]  # (tool id, namespace) pairs a wired tool reads

    @classmethod
    def baseline(cls, tools: Sequence[ToolSpec]) -> Registry:
        return cls(tuple(tools), frozenset((t.id, ns) for t in tools for ns in t.wired))

    def tool(self, tool_id: str) -> ToolSpec:
        for t in self.tools:
            if t.id == tool_id:
                return t
        raise KeyError(f"no tool {tool_id!r} in the registry (ids are domain/name)")

    SWITCH = ("off", "shipped", "on")

    def switch(self, tool_id: str, state: str) -> Registry:
        """One tool's wiring switch: `off` (reads nothing, even what it shipped with), `shipped` (what the
        shipped agent reads), `on` (every namespace it could read)."""
        if state not in self.SWITCH:
            raise ValueError(f"switch state {state!r} is not one of {', '.join(self.SWITCH)}")
        t = self.tool(tool_id)
        rest = frozenset(p for p in self.wiring if p[0] != t.id)
        reads = {"off": frozenset(), "shipped": t.wired, "on": t.reads}[state]
        return replace(self, wiring=rest | frozenset((t.id, ns) for ns in reads))

    def state(self, tool_id: str) -> str:
        t = self.tool(tool_id)
        have = {ns for tid, ns in self.wiring if tid == t.id}
        return (
            "on"
            if have == t.reads and have
            else "shipped"
            if have and have == t.wired
            else "off"
            if not have
            else "partial"
        )

    def wire(self, tool_id: str, on: bool = True) -> Registry:
        """Switch a tool on (it reads every namespace it could) or off (it reads none, even shipped ones)."""
        return self.switch(tool_id, "on" if on else "off")

    def with_wired(self, tool_ids: Iterable[str]) -> Registry:
        """Exactly these tools switched on (each reading all it could), every other tool off."""
        out = replace(self, wiring=frozenset())
        for tid in tool_ids:
            out = out.wire(tid)
        return out

    def all_wired(self) -> Registry:
        return self.with_wired(t.id for t in self.wireable)

    @property
    def wireable(self) -> tuple[ToolSpec, ...]:
        return tuple(t for t in self.tools if t.reads)

    def is_on(self, tool_id: str) -> bool:
        return any(p[0] == tool_id for p in self.wiring)

    def readers(self, namespace: str, domain: str) -> tuple[str, ...]:
        """Wired tools of `domain` that read `namespace` (tool names)."""
        return tuple(
            sorted(t.split("/", 1)[1] for t, ns in self.wiring if ns == namespace and t.split("/", 1)[0] == domain)
        )

    def could_read(self, namespace: str, domain: str) -> tuple[str, ...]:
        return tuple(sorted(t.name for t in self.tools if t.domain == domain and namespace in t.reads))

    def setter(self, name: str, domain: str) -> ToolSpec | None:
        return next((t for t in self.tools if t.domain == domain and t.name == name and t.writes), None)

    def names(self, domain: str) -> tuple[str, ...]:
        return tuple(t.name for t in self.tools if t.domain == domain)

    def consumers(self, domain: str) -> Consumers:
        """The wired tools of one agent as `facts.Consumers` (what `facts.report` checks facts against)."""
        out = Consumers()
        for tid, ns in sorted(self.wiring):
            d, name = tid.split("/", 1)
            if d == domain:
                out.declare(name, ns)
        return out


@dataclass(frozen=True)
class Domain:
    name: str
    skill: str
    skill_dir: Path


@dataclass(frozen=True)
class Source:
    path: Path
    seed: int
    domains: Mapping[str, Domain]
    namespaces: Mapping[tuple[str, str], Namespace]  # (domain, name) -> Namespace
    registry: Registry
    slots: Mapping[str, tuple]
    templates: tuple[Mapping[str, Any], ...]
    skills: Mapping[str, Any] = field(default_factory=dict)  # domain -> its Skill

    def vocabulary(self, domain: str) -> tuple[Namespace, ...]:
        return tuple(ns for (d, _), ns in self.namespaces.items() if d == domain)

    def namespace(self, domain: str, name: str) -> Namespace:
        try:
            return self.namespaces[(domain, name)]
        except KeyError:
            raise CorpusError(f"{self.path}: no namespace {name!r} in domain {domain!r}") from None

    def skill(self, domain: str):
        return self.skills[domain]


def _err(path: Path, where: str, msg: str) -> CorpusError:
    return CorpusError(f"{path}: {where}: {msg}")


def _strs(value: Any, path: Path, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _err(path, where, "must be a list of non-empty strings")
    return tuple(value)


def _known(raw: Any, allowed: set[str], path: Path, where: str) -> Mapping:
    if not isinstance(raw, Mapping):
        raise _err(path, where, "must be a mapping")
    extra = sorted(set(raw) - allowed)
    if extra:
        raise _err(path, f"{where}.{extra[0]}", f"unknown field (allowed: {', '.join(sorted(allowed))})")
    return raw


def _key_spec(ns: str, key: str | None, raw: Mapping, path: Path, where: str) -> KeySpec:
    _known(raw, {"shape", "unit", "options", "cues", "scopes"}, path, where)
    shape = raw.get("shape")
    if shape not in SHAPES[:-1]:
        raise _err(path, f"{where}.shape", f"{shape!r} is not one of {', '.join(SHAPES[:-1])}")
    unit = raw.get("unit")
    if shape in UNITS and unit not in UNITS[shape]:
        raise _err(path, f"{where}.unit", f"a {shape} needs a unit in {', '.join(UNITS[shape])}")
    options = raw.get("options") or {}
    if shape == "enumeration" and (not isinstance(options, Mapping) or not options):
        raise _err(path, f"{where}.options", "an enumeration needs options {text: value}")
    cues = _strs(raw.get("cues"), path, f"{where}.cues")
    if not cues:
        raise _err(path, f"{where}.cues", "at least one cue word")
    scopes = _strs(raw.get("scopes"), path, f"{where}.scopes")
    bad = [s for s in scopes if s not in ("sender", "person", "path")]
    if bad:
        raise _err(path, f"{where}.scopes", f"unknown scope kind(s) {bad}")
    return KeySpec(
        ns,
        key,
        shape,
        tuple(c.lower() for c in cues),
        unit,
        MappingProxyType({str(k).lower(): str(v) for k, v in options.items()}),
        scopes,
    )


def load_source(path: str | Path = DEFAULT_SOURCE) -> Source:
    """Parse and check the hand-authored source. Every reference (namespace, key, section, tool) must resolve.
    Cached per (path, modification time): a `Source` is immutable."""
    path = Path(path).resolve()
    try:
        stamp = path.stat().st_mtime_ns
    except OSError as exc:
        raise CorpusError(f"{path}: {exc}") from exc
    return _load_source(path, stamp)


@lru_cache(maxsize=8)
def _load_source(path: Path, _stamp: int) -> Source:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise CorpusError(f"{path}: {exc}") from exc
    if not isinstance(doc, Mapping):
        raise _err(path, "top level", "must be a mapping")
    domains = {}
    for name, d in (doc.get("domains") or {}).items():
        if not isinstance(d, Mapping) or not d.get("skill") or not d.get("skill_dir"):
            raise _err(path, f"domains.{name}", "needs skill and skill_dir")
        domains[name] = Domain(name, d["skill"], Path(d["skill_dir"]))
    namespaces: dict[tuple[str, str], Namespace] = {}
    for i, raw in enumerate(doc.get("namespaces") or []):
        where = f"namespaces[{i}]"
        _known(raw, {"name", "domain", "section", "members", "value", "cues", "keys", "why_no_tool"}, path, where)
        name, domain, section = raw.get("name"), raw.get("domain"), raw.get("section")
        if domain not in domains or not name or not section:
            raise _err(path, where, "needs name, section and a domain listed under domains")
        if (domain, name) in namespaces:
            raise _err(path, where, f"namespace {name!r} declared twice in {domain}")
        if raw.get("members"):
            kind = raw["members"]
            if kind not in MEMBER_SHAPES:
                raise _err(path, f"{where}.members", f"{kind!r} is not one of {', '.join(MEMBER_SHAPES)}")
            value_kind = raw.get("value")
            if value_kind not in (None, "person") or (kind == "path" and not value_kind):
                raise _err(path, f"{where}.value", "members hold true, or (path members) a person")
            cues = _strs(raw.get("cues"), path, f"{where}.cues")
            if not cues:
                raise _err(path, f"{where}.cues", "at least one cue word")
            keys = (
                KeySpec(
                    name,
                    None,
                    value_kind or MEMBER_SHAPES[kind],
                    tuple(c.lower() for c in cues),
                    members=kind,
                    member_value=value_kind,
                ),
            )
        else:
            if not isinstance(raw.get("keys"), Mapping) or not raw["keys"]:
                raise _err(path, where, "needs keys (or members)")
            keys = tuple(_key_spec(name, k, v, path, f"{where}.keys.{k}") for k, v in raw["keys"].items())
        namespaces[(domain, name)] = Namespace(name, domain, section, keys, raw.get("why_no_tool"))
    tools = []
    for i, raw in enumerate(doc.get("tools") or []):
        where = f"tools[{i}]"
        _known(raw, {"name", "domain", "reads", "wired", "writes", "why"}, path, where)
        if raw.get("domain") not in domains or not raw.get("name"):
            raise _err(path, where, "needs name and a known domain")
        t = ToolSpec(
            raw["name"],
            raw["domain"],
            frozenset(_strs(raw.get("reads"), path, f"{where}.reads")),
            frozenset(_strs(raw.get("wired"), path, f"{where}.wired")),
            raw.get("writes"),
            str(raw.get("why") or ""),
        )
        for ns in t.reads | ({t.writes} if t.writes else set()):
            if (t.domain, ns) not in namespaces:
                raise _err(path, where, f"{t.name} names namespace {ns!r}, not declared in {t.domain}")
        if not t.wired <= t.reads:
            raise _err(path, f"{where}.wired", f"{sorted(t.wired - t.reads)} not in reads")
        if t.reads - t.wired and not t.why:
            raise _err(path, f"{where}.why", "a tool that could be wired says why it plausibly can")
        tools.append(t)
    registry = Registry.baseline(tools)
    for (domain, name), ns in namespaces.items():
        readable = bool(registry.could_read(name, domain))
        if readable == bool(ns.why_no_tool):
            raise _err(path, f"namespace {name}", "why_no_tool is set exactly when no tool could read it")
    slots = {}
    for name, values in (doc.get("slots") or {}).items():
        if not isinstance(values, list) or not values:
            raise _err(path, f"slots.{name}", "must be a non-empty list")
        slots[name] = tuple(MappingProxyType(dict(v)) if isinstance(v, Mapping) else str(v) for v in values)
    skills = {}
    for d, dom in domains.items():
        try:
            skills[d] = load_skill(ROOT / dom.skill_dir)
        except Exception as exc:  # SkillError, OSError: name the source field that pointed there
            raise _err(path, f"domains.{d}.skill_dir", str(exc)) from exc
    source = Source(
        path,
        int(doc.get("seed", 0)),
        MappingProxyType(domains),
        MappingProxyType(namespaces),
        registry,
        MappingProxyType(slots),
        tuple(doc.get("lessons") or ()),
        MappingProxyType(skills),
    )
    for d in domains:
        slugs = {s.slug for s in parse(source.skill(d).body)}
        for ns in source.vocabulary(d):
            if ns.section not in slugs:
                raise _err(path, f"namespace {ns.name}", f"section {ns.section!r} not in skill {domains[d].skill}")
    return source


# ------------------------------------------------------------------------------------------- corpus


@dataclass(frozen=True)
class LabelledLesson:
    """One user correction and its gold representation."""

    id: str
    template: str
    split: str
    domain: str
    skill: str
    section: str
    capture: str  # setter:<tool> | remember
    text: str
    tier: int
    kind: str
    shape: str
    namespace: str = ""
    key: str = ""
    value: Any = None
    scope: str = "user"
    prefer: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()
    prose: str = ""
    consumers: tuple[str, ...] = ()  # value-shaped: the tools that could read it once wired (registry model)

    @property
    def value_shaped(self) -> bool:
        return self.tier in (0, 2)

    def to_row(self) -> dict:
        return {
            "lesson_id": self.id,
            "template": self.template,
            "split": self.split,
            "domain": self.domain,
            "skill": self.skill,
            "section": self.section,
            "capture": self.capture,
            "text": self.text,
            "gold_tier": self.tier,
            "gold_kind": self.kind,
            "shape": self.shape,
            "namespace": self.namespace,
            "key": self.key,
            "value": "" if self.value is None else json.dumps(self.value, ensure_ascii=False),
            "scope": self.scope if self.value_shaped else "",
            "consumers": " ".join(self.consumers),
            "prefer": " ".join(self.prefer),
            "drop": " ".join(self.drop),
            "prose": self.prose,
        }


def _rng(*key: object) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha256("\x1f".join(map(str, key)).encode()).digest()[:8], "big"))


def _slot_names(*texts: str) -> list[str]:
    names = []
    for text in texts:
        for _, name, _, _ in string.Formatter().parse(text):
            if name:
                base = name.split("[", 1)[0]
                if base not in names:
                    names.append(base)
    return names


def _typed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def build_corpus(source: Source) -> list[LabelledLesson]:
    """Expand the templates: `n` lessons each (default: one per phrasing), seeded per template and draw."""
    out: list[LabelledLesson] = []
    seen: set[str] = set()
    for i, t in enumerate(source.templates):
        where = f"lessons[{i}] ({t.get('id')})"
        _known(
            t, {"id", "domain", "section", "split", "capture", "n", "gold", "prose", "phrasings"}, source.path, where
        )
        tid, domain = t.get("id"), t.get("domain")
        if not tid or domain not in source.domains:
            raise _err(source.path, where, "needs an id and a known domain")
        gold, phrasings, prose = (
            t.get("gold") or {},
            _strs(t.get("phrasings"), source.path, f"{where}.phrasings"),
            t.get("prose"),
        )
        if not phrasings or not isinstance(prose, str):
            raise _err(source.path, where, "needs phrasings and a prose sentence")
        if t.get("split") not in ("dev", "test"):
            raise _err(source.path, f"{where}.split", "dev or test")
        capture = str(t.get("capture", ""))
        if capture.split(":", 1)[0] not in CAPTURES:
            raise _err(source.path, f"{where}.capture", f"one of {', '.join(CAPTURES)} (setter:<tool>)")
        tier = gold.get("tier")
        if tier not in TIER_KINDS:
            raise _err(source.path, f"{where}.gold.tier", "0, 1, 2 or 3")
        if capture.startswith("setter:"):
            setter = source.registry.setter(capture[7:], domain)
            if setter is None or setter.writes != gold.get("namespace"):
                raise _err(source.path, f"{where}.capture", f"{capture} is not a setter of {gold.get('namespace')}")
        gold_texts = [str(v) for v in gold.values() if isinstance(v, str)]
        names = _slot_names(prose, *phrasings, *gold_texts)
        unknown = [n for n in names if n not in source.slots]
        if unknown:
            raise _err(source.path, where, f"unknown slot(s) {unknown}")
        n = int(t.get("n") or len(phrasings))
        for j in range(n):
            rng = _rng(source.seed, tid, j)
            for _attempt in range(64):
                fill = {name: rng.choice(source.slots[name]) for name in names}
                phrasing = phrasings[j % len(phrasings)] if not names else rng.choice(phrasings)
                text = phrasing.format(**fill)
                if text not in seen:
                    break
            else:
                raise _err(source.path, where, f"cannot draw {n} distinct lessons from its slots")
            seen.add(text)
            out.append(
                _lesson(
                    source,
                    t,
                    tier,
                    f"{tid}-{j + 1:02d}",
                    text,
                    prose.format(**fill),
                    {k: (v.format(**fill) if isinstance(v, str) else v) for k, v in gold.items()},
                    where,
                )
            )
    return out


def _lesson(
    source: Source, t: Mapping, tier: int, lid: str, text: str, prose: str, gold: Mapping, where: str
) -> LabelledLesson:
    domain = t["domain"]
    skill = source.domains[domain].skill
    base = dict(
        id=lid,
        template=t["id"],
        split=t["split"],
        domain=domain,
        skill=skill,
        capture=t["capture"],
        text=text,
        tier=tier,
        kind=TIER_KINDS[tier],
        prose=prose,
    )
    if tier in (0, 2):
        ns = source.namespace(domain, gold.get("namespace"))
        key = str(gold.get("key", ""))
        spec = ns.spec(key)
        if spec is None:
            raise _err(source.path, f"{where}.gold.key", f"{key!r} is not a key of {ns.name}")
        readers = source.registry.readers(ns.name, domain)
        if (tier == 0) != bool(readers):
            raise _err(
                source.path,
                f"{where}.gold.tier",
                f"tier {tier}, but the shipped readers of {ns.name} are {list(readers) or 'none'} "
                "(tier 0 iff a shipped tool reads it)",
            )
        value = _typed(gold["value"]) if isinstance(gold.get("value"), str) else gold.get("value")
        return LabelledLesson(
            **base,
            section=ns.section,
            shape=spec.shape,
            namespace=ns.name,
            key=key,
            value=value,
            scope=str(gold.get("scope") or "user"),
            consumers=source.registry.could_read(ns.name, domain),
        )
    section = t.get("section")
    slugs = {s.slug for s in parse(source.skill(domain).body)}
    if section not in slugs:
        raise _err(source.path, f"{where}.section", f"{section!r} is not a section of {skill}")
    prefer = tuple(gold.get("prefer") or ())
    drop = tuple(gold.get("drop") or ())
    if tier == 1:
        unknown = [n for n in prefer + drop if n not in source.registry.names(domain)]
        if unknown or not (prefer or drop):
            raise _err(source.path, f"{where}.gold", f"a tool hint names registry tools (unknown: {unknown})")
    return LabelledLesson(**base, section=section, shape="none", prefer=prefer, drop=drop)


def write_corpus(lessons: Sequence[LabelledLesson], path: str | Path = DEFAULT_CORPUS) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, COLUMNS, lineterminator="\n")
        w.writeheader()
        for lesson in lessons:
            w.writerow(lesson.to_row())
    return path


def load_corpus(path: str | Path = DEFAULT_CORPUS) -> tuple[LabelledLesson, ...]:
    """Read lessons.csv back into `LabelledLesson`s; a bad row raises `CorpusError` naming file and line."""
    path = Path(path)
    out = []
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise CorpusError(f"{path}:1: header must be {','.join(COLUMNS)}")
        for row in reader:
            line = reader.line_num
            try:
                tier = int(row["gold_tier"])
                if tier not in TIER_KINDS or row["gold_kind"] != TIER_KINDS[tier] or row["shape"] not in SHAPES:
                    raise ValueError(f"tier/kind/shape {tier}/{row['gold_kind']}/{row['shape']} inconsistent")
                out.append(
                    LabelledLesson(
                        row["lesson_id"],
                        row["template"],
                        row["split"],
                        row["domain"],
                        row["skill"],
                        row["section"],
                        row["capture"],
                        row["text"],
                        tier,
                        row["gold_kind"],
                        row["shape"],
                        row["namespace"],
                        row["key"],
                        json.loads(row["value"]) if row["value"] else None,
                        row["scope"] or "user",
                        tuple(row["prefer"].split()),
                        tuple(row["drop"].split()),
                        row["prose"],
                        tuple(row["consumers"].split()),
                    )
                )
            except (ValueError, KeyError, TypeError) as exc:
                raise CorpusError(f"{path}:{line}: {exc}") from exc
    return tuple(out)


# ---------------------------------------------------------------------------------------- extractor

_WORD_NUMBERS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "hundred": 100,
}
_WORDNUM = r"(?:(?:one|two|three|four|five|six|seven|eight|nine|ten)\s+hundred|" + "|".join(_WORD_NUMBERS) + r")"
_NUM = rf"(?:\d[\d,]*(?:\.\d+)?|{_WORDNUM})"
_UNIT_MINUTES = {
    "second": 1 / 60,
    "sec": 1 / 60,
    "s": 1 / 60,
    "minute": 1,
    "min": 1,
    "hour": 60,
    "hr": 60,
    "h": 60,
    "day": 1440,
    "week": 10080,
    "month": 43200,
    "year": 525600,
    "decade": 5256000,
}
_TO_UNIT = {"seconds": 1 / 60, "minutes": 1, "hours": 60, "days": 1440, "years": 525600}
_DURATION = re.compile(
    rf"\b(?P<n>{_NUM}|half an?|half a|a quarter of an?|an?)\s*-?\s*"
    r"(?P<u>seconds?|secs?|minutes?|mins?|hours?|hrs?|h|days?|weeks?|months?|years?|decades?)\b"
    r"|\b(?:last|past)\s+(?P<u1>week|month|year|decade)\b"
)
_TIME = re.compile(r"\b(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ap>am|pm)\b|\b(?P<h2>\d{1,2}):(?P<m2>\d{2})\b")
_PERCENT = re.compile(r"\b(?P<n>\d+(?:\.\d+)?)\s*(?:%|percent\b)")
_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
_COUNT = re.compile(rf"\b{_NUM}\b")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_AT_DOMAIN = re.compile(r"(?<![\w.])@[\w-]+(?:\.[\w-]+)+")
_SITE = re.compile(r"\b(?:[a-z0-9-]+\.)+(?:com|org|net|io|gov|int|edu|co\.uk)\b")
_PATH = re.compile(r"(?<![\w/])(?:[\w.-]+/)+(?=[\s,.;:)]|$)")
_PERSON = re.compile(r"\b[A-ZÀ-Ý][a-zà-ÿ]+(?:\s+[A-ZÀ-Ý][a-zà-ÿ]+)?\b")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NOT_PEOPLE = set(_WEEKDAYS) | {
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "english",
    "german",
    "spanish",
    "french",
    "japanese",
    "portuguese",
    "i",
}
_SUBJECT_VERBS = ("is", "owns", "should", "reads", "needs", "prefers", "will", "wants", "has", "can", "must")
_NEGATORS = {
    "not",
    "no",
    "never",
    "don't",
    "dont",
    "can't",
    "cannot",
    "stop",
    "instead",
    "rather",
    "n't",
    "without",
    "won't",
}
_BOUNDS = {"than", "most", "least", "under", "over", "above", "below", "up", "more", "fewer", "less"}
_SPLIT_CLAUSES = re.compile(r"[;,.—:]|\s-\s")
_QUANTITIES = frozenset({"duration", "time", "percent", "year", "count"})
# Not instructions of their own: a rejected alternative (", not just 24 hours") and a list ("high, medium or low").
_CONTRAST = re.compile(r"[,;]\s*(?:not|instead of|rather than)\s+(?:just\s+)?[\w%:-]+(?:\s+[\w%:-]+)?\s*(?=[,.;]|$)")
_LIST = re.compile(r"\b\w+,\s+\w+,?\s+(?:or|and)\s+\w+\b")


@dataclass(frozen=True)
class ExtractedValue:
    """What the extractor reads out of a correction: `{namespace, key, value, scope}` plus its shape."""

    namespace: str
    key: str | None
    value: Any
    scope: str
    shape: str
    score: float = 0.0

    def to_dict(self) -> dict:
        return {
            "namespace": self.namespace,
            "key": self.key,
            "value": self.value,
            "scope": self.scope,
            "shape": self.shape,
        }


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    kind: str  # duration | time | percent | year | count | email | domain | site | path | person | weekday
    value: Any
    explicit: bool = True  # False for article-only durations ("a day"), often a rate ("… a day")


def _number(text: str) -> float | None:
    text = text.strip().lower().replace(",", "")
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return float(text)
    m = re.fullmatch(r"(\w+)\s+hundred", text)
    if m and m.group(1) in _WORD_NUMBERS:
        return float(_WORD_NUMBERS[m.group(1)] * 100)
    return float(_WORD_NUMBERS[text]) if text in _WORD_NUMBERS else None


def _clean(x: float) -> int | float:
    return int(x) if float(x).is_integer() else round(x, 4)


def _words_before(text: str, at: int, n: int = 2) -> list[str]:
    clause = _SPLIT_CLAUSES.split(text[:at])[-1]
    return clause.lower().split()[-n:]


def _negated(text: str, at: int, end: int | None = None) -> bool:
    """A value or cue the user rejects: "not 72", "stop flagging 80", "… 72 hours is too slow"."""
    before = _words_before(text, at)
    if _BOUNDS & set(before):
        return False  # "no more than 5", "not longer than …" are bounds, not rejections
    if any(w in _NEGATORS or w.endswith("n't") for w in before):
        return True
    after = text[end : end + 12].lower() if end is not None else ""
    return bool(re.match(r"\s*(?:is|are) too\b", after))


def _spans(text: str) -> list[_Span]:
    """Every value-bearing span, longest kinds first; a character belongs to at most one span."""
    low = text.lower()
    taken = [False] * len(text)
    out: list[_Span] = []

    def add(start: int, end: int, kind: str, value: Any, explicit: bool = True) -> None:
        if any(taken[start:end]):
            return
        for i in range(start, end):
            taken[i] = True
        out.append(_Span(start, end, kind, value, explicit))

    for m in _EMAIL.finditer(text):
        add(m.start(), m.end(), "email", m.group(0).lower())
    for m in _AT_DOMAIN.finditer(text):
        add(m.start(), m.end(), "domain", m.group(0).lower())
    for m in _SITE.finditer(low):
        add(m.start(), m.end(), "site", m.group(0))
    for m in _PATH.finditer(text):
        add(m.start(), m.end(), "path", m.group(0))
    for m in _TIME.finditer(low):
        if m.group("h"):
            h, mi = int(m.group("h")) % 12 + (12 if m.group("ap") == "pm" else 0), int(m.group("m") or 0)
        else:
            h, mi = int(m.group("h2")), int(m.group("m2"))
        if h < 24 and mi < 60:
            add(m.start(), m.end(), "time", f"{h:02d}:{mi:02d}")
    for m in _PERCENT.finditer(low):
        add(m.start(), m.end(), "percent", _clean(float(m.group("n"))))
    for m in _DURATION.finditer(low):
        if m.group("u1"):
            add(m.start(), m.end(), "duration", _UNIT_MINUTES[m.group("u1")])
            continue
        n, unit = m.group("n"), m.group("u").rstrip("s") or "s"
        unit = {"sec": "second", "secs": "second", "hr": "hour", "hrs": "hour", "min": "minute", "mins": "minute"}.get(
            unit, unit
        )
        amount = (
            0.5
            if n.startswith("half")
            else 0.25
            if n.startswith("a quarter")
            else 1.0
            if n in ("a", "an")
            else _number(n)
        )
        if amount is not None and unit in _UNIT_MINUTES:
            add(m.start(), m.end(), "duration", amount * _UNIT_MINUTES[unit], n not in ("a", "an"))
    for m in _YEAR.finditer(low):
        add(m.start(), m.end(), "year", int(m.group(0)))
    for m in _COUNT.finditer(low):
        value = _number(m.group(0))
        if value is not None and m.group(0) != "one":  # "one message", "one thing": a determiner
            add(m.start(), m.end(), "count", value)
    for day in _WEEKDAYS:
        for m in re.finditer(rf"\b{day}s?\b", low):
            add(m.start(), m.end(), "weekday", day)
    for m in _PERSON.finditer(text):
        start, name = m.start(), m.group(0)
        at_start = not text[:start].strip() or text[:start].rstrip()[-1] in ".;!?("
        rest = text[m.end() :].lstrip().lower()
        if at_start and not (rest.startswith("'s") or rest.split(" ", 1)[0] in _SUBJECT_VERBS):
            if " " not in name:
                continue
            first, name = name.split(None, 1)  # "Add Jordan …": a capitalised verb, then the name
            start = m.end() - len(name)
        if name.lower() in _NOT_PEOPLE or any(w.lower() in _NOT_PEOPLE for w in name.split()):
            continue
        add(start, m.end(), "person", name)
    return sorted(out, key=lambda s: s.start)


def _cue_hits(low: str, cues: Sequence[str]) -> list[tuple[int, str]]:
    hits = []
    for cue in cues:
        for m in re.finditer(r"(?<![\w])" + re.escape(cue), low):
            hits.append((m.start(), cue))
    return sorted(hits)


def _resolve(spec: KeySpec, spans: Sequence[_Span], text: str, low: str, cue_at: int) -> tuple[str | None, Any]:
    """(key, value) for one key spec from the spans, or (None, None) when the text holds no fitting value."""
    # Quantities the user rejects ("not 72", "stop flagging 80") are dropped; entities and options are not
    # (a member's polarity is its namespace's: "don't archive x@y" puts x@y on never_archive).
    live = [s for s in spans if s.kind not in _QUANTITIES or not _negated(text, s.start, s.end)]

    def nearest(kinds: Iterable[str]) -> _Span | None:
        cands = [s for s in live if s.kind in kinds]
        return min(cands, key=lambda s: (not s.explicit, abs(s.start - cue_at), s.start)) if cands else None

    if spec.members:
        kinds = {
            "sender": ("email", "domain", "site"),
            "person": ("person",),
            "weekday": ("weekday",),
            "path": ("path",),
        }[spec.members]
        member = nearest(kinds)
        if member is None:
            return None, None
        if spec.member_value == "person":
            who = nearest(("person",))
            return (member.value, who.value) if who else (None, None)
        return member.value, True
    if spec.shape == "enumeration":
        hits = sorted((m.start(), opt) for opt in spec.options for m in re.finditer(rf"\b{re.escape(opt)}\b", low))
        if not hits:
            return None, None
        best = max((h for h in hits if h[0] == hits[0][0]), key=lambda h: len(h[1]))
        return spec.key, spec.options[best[1]]
    if spec.shape == "boolean":
        return spec.key, not _negated(text, cue_at)
    if spec.shape == "duration" or (spec.shape == "threshold" and spec.unit == "seconds"):
        s = nearest(("duration",))
        return (spec.key, _clean(s.value / _TO_UNIT[spec.unit])) if s else (None, None)
    if spec.shape == "threshold":
        kind = {"time": "time", "percent": "percent", "year": "year", "number": "count"}[spec.unit]
        s = nearest((kind,))
        return (spec.key, _clean(s.value) if kind == "count" else s.value) if s else (None, None)
    s = nearest(("count",))  # count
    return (spec.key, _clean(s.value)) if s else (None, None)


def _scope(spec: KeySpec, spans: Sequence[_Span]) -> str:
    for kind, labels in (("sender", ("email", "domain")), ("person", ("person",)), ("path", ("path",))):
        if kind in spec.scopes:
            hit = next((s for s in spans if s.kind in labels), None)
            if hit is not None:
                return f"{kind}:{hit.value}"
    return "user"


def extract(text: str, vocabulary: Sequence[Namespace]) -> ExtractedValue | None:
    """The value-shape extractor: the best-cued key of `vocabulary` whose shape finds a value in `text`.

    Deterministic: spans (addresses, sites, paths, times, percents, durations, years, counts, weekdays,
    names) are read first; a key is a candidate when one of its cue words starts a word of the text and a
    non-rejected span of its shape is present; the candidate with the most cue characters wins (a key that
    needs a value beats a boolean that does not, then source order). Durations convert to the key's unit.
    """
    low = text.lower()
    spans = _spans(text)
    best: tuple[tuple, ExtractedValue] | None = None
    for order, ns in enumerate(vocabulary):
        for spec in ns.keys:
            hits = _cue_hits(low, spec.cues)
            if not hits:
                continue
            key, value = _resolve(spec, spans, text, low, hits[0][0])
            if key is None:
                continue
            score = sum(len(c) for c in {c for _, c in hits})
            shape = spec.shape
            rank = (score, spec.shape != "boolean", -order)
            if best is None or rank > best[0]:
                best = (rank, ExtractedValue(ns.name, key, value, _scope(spec, spans), shape, float(score)))
    return best[1] if best else None


# ------------------------------------------------------------------------------------------- router


@dataclass(frozen=True)
class Route:
    """The tier the write site declares, the rule that decided, and what would be stored."""

    tier: int
    rule: str
    proposal: ExtractedValue | None = None
    prefer: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()
    note: str = ""

    @property
    def kind(self) -> str:
        return TIER_KINDS[self.tier]


@dataclass(frozen=True)
class _Ctx:
    text: str
    capture: str
    domain: str
    vocabulary: tuple[Namespace, ...]
    registry: Registry
    policy: str
    extractor: Callable[[str, Sequence[Namespace]], ExtractedValue | None]


def _by_wiring(ctx: _Ctx, p: ExtractedValue | None, rule: str, namespace: str) -> Route:
    readers = ctx.registry.readers(namespace, ctx.domain)
    if readers:
        return Route(0, rule, p, note=f"read by {', '.join(readers)}")
    if ctx.policy == "v1":
        return Route(3, rule, p, note=f"no wired tool reads {namespace}; v1 has no tier 2, so prose")
    return Route(2, rule, p, note=f"no wired tool reads {namespace}: a fact would be inert")


def setter_call(ctx: _Ctx) -> Route | None:
    """A preference-setting tool call is tier 0 by construction — unless nothing reads what it writes."""
    if not ctx.capture.startswith("setter:"):
        return None
    setter = ctx.registry.setter(ctx.capture[7:], ctx.domain)
    if setter is None:
        return None
    ns = next(n for n in ctx.vocabulary if n.name == setter.writes)
    p = ctx.extractor(ctx.text, [ns]) or ExtractedValue(ns.name, None, None, "user", ns.keys[0].shape)
    return _by_wiring(ctx, p, "setter_call", ns.name)


def tool_prior(ctx: _Ctx) -> Route | None:
    """Names a tool of the agent: a tier-1 prior. Mentions after an avoid word in their clause are drops."""
    prefer, drop = [], []
    for name in ctx.registry.names(ctx.domain):
        for m in re.finditer(rf"(?<![\w]){re.escape(name)}(?![\w])", ctx.text):
            before = _words_before(ctx.text, m.start(), 6)
            avoid = any(w in _NEGATORS or w.endswith("n't") for w in before) or "instead of" in " ".join(before)
            (drop if avoid else prefer).append((m.start(), name))
    if not prefer and not drop:
        return None
    order = lambda xs: tuple(dict.fromkeys(n for _, n in sorted(xs)))
    dropped = order(drop)
    return Route(1, "tool_prior", None, tuple(n for n in order(prefer) if n not in dropped), dropped)


def procedural(ctx: _Ctx) -> Route | None:
    """Several instructions in one correction (≥ 2 clause breaks, or one plus an "and"): prose."""
    text = _LIST.sub("LIST", _CONTRAST.sub("", ctx.text))
    breaks = len(re.findall(r"[,;—]|\s-\s", text))
    ands = len(re.findall(r"\b(?:and|then|plus)\b", text.lower()))
    if breaks >= 2 or (breaks >= 1 and ands >= 1):
        return Route(3, "procedural", note=f"{breaks} clause break(s), {ands} conjunction(s)")
    return None


def value_shaped(ctx: _Ctx) -> Route | None:
    p = ctx.extractor(ctx.text, ctx.vocabulary)
    return None if p is None else _by_wiring(ctx, p, "value_shaped", p.namespace)


def prose(ctx: _Ctx) -> Route:
    return Route(3, "prose", note="no value, no tool: tier-3 prose")


ROUTE_RULES: tuple[Callable[[_Ctx], Route | None], ...] = (setter_call, tool_prior, procedural, value_shaped, prose)


def route(
    text: str,
    capture: str,
    domain: str,
    source: Source,
    registry: Registry | None = None,
    *,
    policy: str = "research",
    extractor: Callable = extract,
    rules: Sequence[Callable] = ROUTE_RULES,
) -> Route:
    """Declare the tier at the write site. `policy`: "research" (tier 2 exists) or "v1" (unwired → prose)."""
    if policy not in ("research", "v1"):
        raise ValueError(f"policy {policy!r} is not research or v1")
    ctx = _Ctx(text, capture, domain, source.vocabulary(domain), registry or source.registry, policy, extractor)
    for rule in rules:
        r = rule(ctx)
        if r is not None:
            return r
    return prose(ctx)


# --------------------------------------------------------------------------------------- evaluation


def confusion(gold: Sequence, pred: Sequence, labels: Sequence) -> pd.DataFrame:
    """Counts: rows = gold label, columns = predicted label, every label present (zeros kept)."""
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold labels but {len(pred)} predictions")
    m = pd.DataFrame(0, index=pd.Index(list(labels), name="gold"), columns=pd.Index(list(labels), name="predicted"))
    for g, p in zip(gold, pred):
        if g not in m.index or p not in m.columns:
            raise ValueError(f"label {g!r} or {p!r} is not one of {list(labels)}")
        m.loc[g, p] += 1
    return m


@dataclass(frozen=True)
class Evaluation:
    rows: pd.DataFrame  # one row per lesson
    tiers: pd.DataFrame  # confusion, gold tier x routed tier
    shapes: pd.DataFrame  # confusion, gold shape x extracted shape (extractor alone, every lesson)

    def accuracy(self, by: str | None = None) -> pd.DataFrame:
        """Tier accuracy over all lessons; shape, key, value, scope and exact {key,value,scope} over the
        value-shaped ones; tool-hint exactness over the tier-1 ones. Optionally grouped (`split`, `domain`)."""

        def one(df: pd.DataFrame) -> pd.Series:
            v = df[df.value_shaped]
            t1 = df[df.gold_tier == 1]
            return pd.Series(
                {
                    "lessons": len(df),
                    "tier": df.tier_ok.mean(),
                    "value_lessons": len(v),
                    "shape": v.shape_ok.mean(),
                    "namespace_key": v.key_ok.mean(),
                    "value": v.value_ok.mean(),
                    "scope": v.scope_ok.mean(),
                    "exact": v.exact.mean(),
                    "tool_hint_exact": t1.hint_ok.mean() if len(t1) else float("nan"),
                    "extractor_false_positive": df[~df.value_shaped].extracted.mean(),
                }
            )

        if by is None:
            return one(self.rows).to_frame("all").T
        return self.rows.groupby(by).apply(one)


def evaluate(
    lessons: Sequence[LabelledLesson],
    source: Source,
    registry: Registry | None = None,
    *,
    policy: str = "research",
    extractor: Callable = extract,
) -> Evaluation:
    """Route every lesson at the given wiring (default: shipped) and score it against its gold labels."""
    registry = registry or source.registry
    rows = []
    for x in lessons:
        r = route(x.text, x.capture, x.domain, source, registry, policy=policy, extractor=extractor)
        alone = extractor(x.text, source.vocabulary(x.domain))
        p = r.proposal
        key_ok = bool(p and p.namespace == x.namespace and p.key == x.key)
        value_ok = key_ok and p.value == x.value and type(p.value) is type(x.value)
        scope_ok = bool(p and p.scope == x.scope)
        rows.append(
            {
                "lesson_id": x.id,
                "template": x.template,
                "split": x.split,
                "domain": x.domain,
                "capture": x.capture.split(":")[0],
                "text": x.text,
                "gold_tier": x.tier,
                "tier": r.tier,
                "rule": r.rule,
                "tier_ok": r.tier == x.tier,
                "value_shaped": x.value_shaped,
                "gold_shape": x.shape,
                "pred_shape": alone.shape if alone else "none",
                "shape_ok": (alone.shape if alone else "none") == x.shape,
                "extracted": alone is not None,
                "gold": f"{x.namespace}.{x.key}={json.dumps(x.value)} @{x.scope}" if x.value_shaped else "",
                "proposed": f"{p.namespace}.{p.key}={json.dumps(p.value)} @{p.scope}" if p else "",
                "key_ok": key_ok,
                "value_ok": value_ok,
                "scope_ok": scope_ok,
                "exact": key_ok and value_ok and scope_ok,
                "hint_ok": (r.prefer, r.drop) == (x.prefer, x.drop),
            }
        )
    df = pd.DataFrame(rows)
    return Evaluation(
        df,
        confusion(df.gold_tier.tolist(), df.tier.tolist(), (0, 1, 2, 3)),
        confusion(df.gold_shape.tolist(), df.pred_shape.tolist(), SHAPES),
    )


# ---------------------------------------------------------------------------------- collapse curve


def needs_tier2(lessons: Iterable[LabelledLesson], registry: Registry) -> list[LabelledLesson]:
    """Value-shaped lessons whose namespace no wired tool reads: what only a tier-2 line (or prose) carries."""
    return [x for x in lessons if x.value_shaped and not registry.readers(x.namespace, x.domain)]


def collapse_curve(
    lessons: Sequence[LabelledLesson], registry: Registry, *, start: Registry | None = None
) -> pd.DataFrame:
    """Wire tools one at a time, greedily (most tier-2 lessons absorbed first, ties by id), from `start`
    (default: the registry as given) until every wireable tool is on. One row per step."""
    lessons = list(lessons)
    current = start or registry
    n, nv = len(lessons), sum(x.value_shaped for x in lessons)

    def row(step: int, tool: str, reg: Registry, absorbed: int) -> dict:
        left = len(needs_tier2(lessons, reg))
        return {
            "step": step,
            "wired": tool,
            "absorbed": absorbed,
            "tier2_lessons": left,
            "share_of_all": left / n if n else 0.0,
            "share_of_value": left / nv if nv else 0.0,
            "tools_on": sum(reg.is_on(t.id) for t in reg.wireable),
        }

    rows = [row(0, "(start)", current, 0)]
    while True:
        before = len(needs_tier2(lessons, current))
        options = []
        for t in current.wireable:
            if all((t.id, ns) in current.wiring for ns in t.reads):
                continue
            trial = current.wire(t.id)
            options.append((before - len(needs_tier2(lessons, trial)), t.id, trial))
        if not options:
            break
        gain, tid, current = max(options, key=lambda o: (o[0], [-ord(c) for c in o[1]]))
        rows.append(row(len(rows), tid, current, gain))
    return pd.DataFrame(rows)


def residual(lessons: Sequence[LabelledLesson], source: Source) -> pd.DataFrame:
    """With every wireable tool wired: what still needs tier 2, per namespace/key, and why no tool reads it."""
    left = needs_tier2(lessons, source.registry.all_wired())
    rows = [
        {
            "domain": x.domain,
            "namespace": x.namespace,
            "key": x.key,
            "shape": x.shape,
            "why_no_tool": source.namespace(x.domain, x.namespace).why_no_tool or "",
        }
        for x in left
    ]
    if not rows:
        return pd.DataFrame(columns=["domain", "namespace", "key", "shape", "why_no_tool", "lessons"])
    return (
        pd.DataFrame(rows)
        .groupby(["domain", "namespace", "key", "shape", "why_no_tool"])
        .size()
        .rename("lessons")
        .reset_index()
        .sort_values(["domain", "lessons"], ascending=[True, False], ignore_index=True)
    )


# ------------------------------------------------------------------------------------- token costs


def _delta(x: LabelledLesson, kind: str, payload: Mapping) -> Delta:
    return Delta(skill=x.skill, kind=kind, payload=dict(payload), anchor=Anchor(x.section, "", None))


def _tier2_payload(x: LabelledLesson, source: Source) -> dict:
    """Member facts (`priority_senders/alice@… = true`) become `{key: namespace, value: member}`."""
    spec = source.namespace(x.domain, x.namespace).spec(x.key)
    if spec is not None and spec.members:
        value = x.key if x.value is True else {x.key: x.value}
        payload = {"key": x.namespace, "value": value}
    else:
        payload = {"key": x.key, "value": x.value}
    if x.scope != "user":
        payload["scope"] = x.scope
    return payload


def renderings(x: LabelledLesson, source: Source) -> dict[str, str]:
    """The text each representation puts in the prompt: tier 0 nothing, tier 1 nothing (schemas move),
    tier 2 the parameter line, tier 3 the prose line — exactly as `resolve` renders deltas."""
    out = {"tier0": "", "tier1": ""}
    if x.value_shaped:
        out["tier2"] = item_text(_delta(x, "parameter", _tier2_payload(x, source)))
    out["tier3"] = item_text(_delta(x, "preference", {"body": x.prose}))
    return out


def _schema(source: Source, domain: str, tool: str) -> str:
    """The tool's declared schema as the model would see it (JSON of name, description, parameters)."""
    gaia = (source.skill(domain).frontmatter.get("metadata") or {}).get("gaia") or {}
    for item in gaia.get("tools") or []:
        if isinstance(item, Mapping) and item.get("name") == tool:
            return json.dumps({"type": "function", "function": dict(item)}, sort_keys=True, default=str)
    return json.dumps({"type": "function", "function": {"name": tool}})


def representation_costs(lessons: Sequence[LabelledLesson], source: Source) -> pd.DataFrame:
    """Resident tokens per lesson and representation (bundled Llama-2 tokenizer, no BOS/EOS).

    tier0: 0 — a fact never enters the prompt (its cost is one wired tool, counted as `tools_to_wire`);
    tier1: 0 text tokens; `tier1_schema_max` is what the preferred tools' schemas cost when the loader is
    below its cap (net zero at the cap); tier2: the parameter line; tier3: the prose line. The section
    label a first learned line adds (`_Learned for this section:_`) is reported once, as `label_tokens`.
    """
    texts, index = [], []
    for x in lessons:
        for rep, text in renderings(x, source).items():
            if text:
                texts.append(text)
                index.append((x.id, rep))
    counts = dict(zip(index, budget.count_many(texts)))
    label = budget.count_tokens(SECTION_LABEL + "\n\n")
    rows = []
    all_wired = source.registry.all_wired()
    for x in lessons:
        schema = sum(budget.count_tokens(_schema(source, x.domain, t)) for t in x.prefer)
        rows.append(
            {
                "lesson_id": x.id,
                "domain": x.domain,
                "gold_tier": x.tier,
                "value_shaped": x.value_shaped,
                "tier0": 0 if x.value_shaped else None,
                "tools_to_wire": (len(all_wired.readers(x.namespace, x.domain)) if x.value_shaped else None),
                "tier1": 0 if x.tier == 1 else None,
                "tier1_schema_max": schema if x.tier == 1 else None,
                "tier2": counts.get((x.id, "tier2")),
                "tier3": counts.get((x.id, "tier3")),
                "label_tokens": label,
            }
        )
    return pd.DataFrame(rows)


def cost_summary(costs: pd.DataFrame) -> pd.DataFrame:
    """Median / mean / p90 resident tokens per representation, over the lessons that representation can hold."""
    out = {}
    for col, mask in (
        ("tier0", costs.value_shaped),
        ("tier1_schema_max", costs.gold_tier == 1),
        ("tier2", costs.value_shaped),
        ("tier3", costs.value_shaped),
        ("tier3_procedural", costs.gold_tier == 3),
    ):
        s = costs.loc[mask, "tier3" if col == "tier3_procedural" else col].astype(float)
        out[col] = {
            "lessons": int(mask.sum()),
            "median": s.median(),
            "mean": s.mean(),
            "p90": s.quantile(0.9),
            "max": s.max(),
        }
    return pd.DataFrame(out).T


# ------------------------------------------------------------------------------------------ wirings


def write_path_tools(source: Source, settings: gates.GateSettings | None = None) -> frozenset[str]:
    """Tool ids the gates' own `write_path_tool` rule refuses to let learning steer toward (a tool-hint that
    prefers one is refused), under `settings` (its confirmation set). Asked of the gate itself, tool by tool,
    so the study and the gates cannot drift."""
    rule = (gates.Rule("write_path_tool", gates.write_path_tool),)
    return frozenset(
        t.id
        for t in source.registry.tools
        if gates.check(
            None,
            source.skill(t.domain),
            "tool-hint",
            {"prefer": [t.name]},
            section=None,
            provenance="user_instruction",
            settings=settings,
            rules=rule,
        ).rule
        == "write_path_tool"
    )


WIRINGS = ("shipped", "gate-allowed", "all wired")


def wirings(source: Source) -> dict[str, Registry]:
    """The three wirings the study compares. `gate-allowed`: every wireable tool the gates allow learning to
    steer is on, every write-path tool is off — shipped wiring included (the rule has no exception for it)."""
    reg, forbidden = source.registry, write_path_tools(source)
    return {
        "shipped": reg,
        "gate-allowed": reg.with_wired(t.id for t in reg.wireable if t.id not in forbidden),
        "all wired": reg.all_wired(),
    }


def tool_table(source: Source) -> pd.DataFrame:
    """The wireable tools: what each could read, what the shipped agent reads, why wiring it is plausible,
    and whether the gates forbid learning to steer it (write path)."""
    forbidden = write_path_tools(source)
    return pd.DataFrame(
        [
            {
                "tool": t.id,
                "could read": ", ".join(sorted(t.reads)),
                "shipped": ", ".join(sorted(t.wired)),
                "write path": t.id in forbidden,
                "why wireable": t.why,
            }
            for t in source.registry.wireable
        ]
    )


def inert_check(lessons: Sequence[LabelledLesson], source: Source) -> pd.DataFrame:
    """The gap seen through the tier-0 seam: store every value-shaped lesson as a fact and ask `facts.report`
    which no tool declares it reads, per wiring. Inert facts should equal the distinct values needing tier 2."""
    value, rows = [x for x in lessons if x.value_shaped], []
    for name, reg in wirings(source).items():
        consumers = Consumers()
        for d in source.domains:
            for tool, namespaces in reg.consumers(d).to_dict().items():
                consumers.declare(f"{d}/{tool}", *[f"{d}/{ns}" for ns in namespaces])
        with Store.open(":memory:") as store:
            for x in value:
                store.put_fact(f"{x.domain}/{x.namespace}", x.key, x.value, scope=x.scope)
            rep = report(store, consumers)
        need = needs_tier2(value, reg)
        rows.append(
            {
                "wiring": name,
                "facts stored": len(rep.lines),
                "inert facts": len(rep.inert),
                "distinct values needing tier 2": len({(x.domain, x.namespace, x.key, x.scope) for x in need}),
                "lessons needing tier 2": len(need),
            }
        )
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------- study


@dataclass(frozen=True)
class DecisionRule:
    """The verdict on the collapse hypothesis, read from its rule file (datasets/rules/02_tier2_collapse.yaml,
    whose `rule` says it in words): "holds" when the leftover share's upper 95 % bound is below `max_leftover`
    and the typed line's token saving's upper bound is below `worth_tokens` (and, when the live arm is
    powered, the typed line is not followed more often); "does not hold" when a lower bound is at or past its
    threshold or the typed line is followed more often; else "undecided". 0.5: the design ships tier 2 only
    when wiring proved insufficient, so wiring must leave a minority; 10: half the seed's twenty-token prose
    sentence, what a typed line must save to pay for a grammar."""

    max_leftover: float
    worth_tokens: float
    file: RuleFile | None = None  # where the numbers came from (None: set by hand, e.g. in a test)

    @classmethod
    def load(cls, rule: RuleFile | str | Path = "02_tier2_collapse") -> "DecisionRule":
        r = rule if isinstance(rule, RuleFile) else rulefile.load(rule)
        return cls(float(r.param("max_leftover")), float(r.param("worth_tokens")), r)

    def verdict(self, leftover: Interval, saving: Interval, compliance: Interval | None = None) -> str:
        """ "holds", "does not hold" or "undecided" from the three intervals (compliance None: not measured)."""
        if (
            leftover.low >= self.max_leftover
            or saving.low >= self.worth_tokens
            or (compliance is not None and compliance.low > 0)
        ):
            return "does not hold"
        if leftover.high < self.max_leftover and saving.high < self.worth_tokens:
            return "holds"
        return "undecided"

    def __str__(self) -> str:
        return (
            f"holds ⇔ leftover share (gate-allowed wiring, upper 95% bound) < {self.max_leftover:.0%} "
            f"and tokens a typed line saves per leftover lesson (upper 95% bound) < {self.worth_tokens:g} "
            "and (when powered) the typed line is not followed more often; does not hold ⇔ a lower bound "
            "is at or past its threshold or the typed line is followed more often; else undecided"
        )


RULE = DecisionRule.load()
WORTH_TOKENS = RULE.worth_tokens  # kept for callers of the old name


def bootstrap(
    rows: pd.DataFrame, stat: Callable[[pd.DataFrame], float], *, by: str = "template", n: int = 1000, seed: int = 0
) -> tuple[float, float]:
    """95% percentile interval of `stat`, resampling whole `by` groups (a template's lessons move together)."""
    import numpy as np

    groups = list(rows.groupby(by, sort=True).indices.values())
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(n):
        pick = rng.integers(0, len(groups), len(groups))
        vals.append(stat(rows.iloc[np.concatenate([groups[i] for i in pick])]))
    lo, hi = np.nanpercentile(vals, [2.5, 97.5])
    return float(lo), float(hi)


def _template_ci(rows: pd.DataFrame, column: str, n: int, seed: int) -> Interval:
    lo, hi = bootstrap(rows, lambda d: d[column].mean(), n=n, seed=seed)
    return Interval(float(rows[column].mean()), lo, hi, 0.95, rows.template.nunique())


def _by_namespace(rows: pd.DataFrame, num: str, den: str, n: int, seed: int) -> Interval:
    """Σnum / Σden, resampling namespaces: whether a lesson has a reader is decided per namespace."""
    per = rows.groupby(["domain", "namespace"])[[num, den]].sum()
    return ratio_ci(per[num].to_numpy(), per[den].to_numpy(), n_resamples=n, seed=seed)


@dataclass(frozen=True)
class CollapseStudy:
    lessons: tuple[LabelledLesson, ...]
    evaluation: Evaluation
    curve: pd.DataFrame
    residual: pd.DataFrame
    costs: pd.DataFrame
    intervals: Mapping[str, Interval]
    coverage: pd.DataFrame = field(default_factory=pd.DataFrame)  # one row per wiring (WIRINGS)
    forbidden: tuple[str, ...] = ()  # wireable tools the gates refuse learning to steer (write path)
    rule: DecisionRule = RULE
    live: Any = None  # a probe.ProbeRun, or None when the live arm was not asked for

    @property
    def frame(self) -> pd.DataFrame:
        """One row per lesson: gold, route, and whether it needs tier 2 at baseline / with all tools wired."""
        return self.evaluation.rows.merge(self.costs, on=["lesson_id", "domain", "gold_tier", "value_shaped"])

    @property
    def residual_ids(self) -> set[str]:
        """Lessons that still need tier 2 with every wireable tool wired."""
        return set(self.evaluation.rows.lesson_id[self.evaluation.rows.residual])

    def compliance(self) -> tuple[Interval | None, str]:
        """(tier 2 − tier 3 compliance difference, or None, and why) from the live arm, if it has the power."""
        if self.live is None:
            return None, "the live-model arm was not run"
        return self.live.compliance()

    def table(self) -> pd.DataFrame:
        """Every number the finding is computed from, with its 95% interval and the unit resampled."""
        ci = self.intervals
        rows = [
            {
                "quantity": f"leftover share, {w}",
                "estimate": ci[f"leftover_{w}"].estimate,
                "low": ci[f"leftover_{w}"].low,
                "high": ci[f"leftover_{w}"].high,
                "resampled": f"{ci[f'leftover_{w}'].n} namespaces",
            }
            for w in WIRINGS
        ]
        for name, label, unit in (
            ("saving", "tokens a typed line saves per leftover lesson, gate-allowed", "leftover namespaces"),
            ("tier_accuracy", "router: gold tier", "templates"),
            ("exact_value_accuracy", "extractor: exact {key, value, scope}", "templates"),
        ):
            rows.append(
                {
                    "quantity": label,
                    "estimate": ci[name].estimate,
                    "low": ci[name].low,
                    "high": ci[name].high,
                    "resampled": f"{ci[name].n} {unit}",
                }
            )
        comp = self.compliance()[0]
        if comp is not None:
            rows.append(
                {
                    "quantity": "compliance, tier 2 − tier 3 (live arm, per key)",
                    "estimate": comp.estimate,
                    "low": comp.low,
                    "high": comp.high,
                    "resampled": f"{comp.n} keys",
                }
            )
        return pd.DataFrame(rows).set_index("quantity")

    def verdict(self) -> str:
        ci = self.intervals
        return self.rule.verdict(ci["leftover_gate-allowed"], ci["saving"], self.compliance()[0])

    def finding(self) -> str:
        """The verdict on the collapse hypothesis: the pre-stated `rule` applied to the numbers of `table()`."""
        t, cov, rule = self.table(), self.coverage.set_index("wiring"), self.rule
        left, save = t.loc["leftover share, gate-allowed"], t.iloc[len(WIRINGS)]
        allw = t.loc["leftover share, all wired"]
        comp, why_not = self.compliance()
        verdict = self.verdict()
        claim1 = (
            "shown" if left.high < rule.max_leftover else "refuted" if left.low >= rule.max_leftover else "not decided"
        )
        claim2 = (
            "shown" if save.high < rule.worth_tokens else "refuted" if save.low >= rule.worth_tokens else "not decided"
        )
        g = cov.loc["gate-allowed"]
        only_forbidden = int(g.lessons - cov.loc["all wired", "lessons"])
        intro = [
            (
                f"**Coverage.** Shipped wiring: {cov.loc['shipped', 'share']:.1%} of "
                f"{int(g.value_lessons)} value-shaped lessons have no reader. Wiring every tool the gates allow "
                f"({int(g.tools_on)} tools) leaves **{left.estimate:.1%}** (95% CI {left.low:.1%}–{left.high:.1%}, "
                f"{left.resampled} resampled). The gates refuse learning on {len(self.forbidden)} wireable "
                f"write-path tools ({', '.join(self.forbidden)}); wiring them anyway would leave "
                f"{allw.estimate:.1%} ({allw.low:.1%}–{allw.high:.1%}) — {only_forbidden} "
                f"lessons that only a forbidden wiring absorbs."
            ),
            (
                f"**Cost.** For the {int(g.lessons)} leftover lessons a typed line saves {save.estimate:.1f} tokens "
                f"per lesson on average over one prose sentence (95% CI {save.low:.1f}–{save.high:.1f}, "
                f"{save.resampled} resampled)."
            ),
            "**Claims** (shown when the interval's upper end is under the bound, refuted when its lower end is at or "
            "past it):",
        ]
        findings = [
            Finding(
                "Claim 1, leftover share of the gate-allowed wiring",
                left.estimate,
                left.low,
                left.high,
                rule.max_leftover,
                f"**{claim1}**",
                spec=".1%",
                side="<",
            ),
            Finding(
                "Claim 2, tokens a typed line saves per leftover lesson",
                save.estimate,
                save.low,
                save.high,
                rule.worth_tokens,
                f"**{claim2}**",
                spec=".1f",
                side="<",
            ),
        ]
        if comp is not None:
            findings.append(
                Finding.of(
                    "Compliance, tier 2 − tier 3 averaged per key",
                    comp,
                    verdict="the typed line is followed more often"
                    if comp.low > 0
                    else "the typed line is not followed more often",
                    note=f"{comp.n} keys resampled; smallest detectable difference {self.live.power.mde:.2f}",
                    spec="+.0%",
                )
            )
        outro = [] if comp is not None else [f"**Compliance.** Not in the verdict: {why_not}."]
        outro.append(
            "**Verdict.** "
            + {
                "holds": "the collapse hypothesis **holds** on this corpus: wire the tool where the gates allow "
                "it (tier 0), write prose where no tool can read the value (tier 3); tier 2 is not "
                "worth building.",
                "does not hold": "the collapse hypothesis **does not hold** on this corpus: "
                + "; ".join(
                    why
                    for why, refuted in (
                        ("wiring leaves too many values without a reader", claim1 == "refuted"),
                        ("the typed line earns its keep in tokens", claim2 == "refuted"),
                        ("the typed line earns its keep in compliance", comp is not None and comp.low > 0),
                    )
                    if refuted
                )
                + ".",
                "undecided": "**undecided** — the data cannot decide: "
                + "; ".join(
                    f"claim {i} is not decided (its interval straddles the threshold)"
                    for i, c in ((1, claim1), (2, claim2))
                    if c == "not decided"
                )
                + ". Tier 2 stays deferred, as v1 ships, until it is decided.",
            }[verdict]
        )
        return render(
            findings, stamp=f"**Rule (stated before the data).** The hypothesis {rule}.", intro=intro, outro=outro
        )


def run(
    corpus: Sequence[LabelledLesson] | None = None,
    source: Source | None = None,
    *,
    live: Any = None,
    n_boot: int = 1000,
    seed: int = 0,
    rule: DecisionRule = RULE,
) -> CollapseStudy:
    """The tier-2 collapse study: routing accuracy, the collapse curve, coverage under the three wirings
    (namespaces resampled), the token saving of a typed line, and — if `live` (a `probe.ProbeRun`) is given —
    the compliance difference. `.table()` holds the numbers, `.finding()` applies `rule` to them."""
    source = source or load_source()
    lessons = tuple(corpus if corpus is not None else load_corpus())
    ev = evaluate(lessons, source)
    regs = wirings(source)
    need = {w: {x.id for x in needs_tier2(lessons, r)} for w, r in regs.items()}
    rows = ev.rows.assign(
        residual=ev.rows.lesson_id.isin(need["all wired"]),
        tier2_at_start=ev.rows.lesson_id.isin(need["shipped"]),
        namespace=[x.namespace for x in lessons],
        **{f"left_{w}": ev.rows.lesson_id.isin(ids) for w, ids in need.items()},
    )
    ev = Evaluation(rows.drop(columns=[c for c in rows if c.startswith("left_")] + ["namespace"]), ev.tiers, ev.shapes)
    costs = representation_costs(lessons, source)
    value = rows[rows.value_shaped].merge(costs[["lesson_id", "tier2", "tier3"]], on="lesson_id")
    value = value.assign(one=1, saving=value.tier3 - value.tier2)
    intervals = {f"leftover_{w}": _by_namespace(value, f"left_{w}", "one", n_boot, seed) for w in WIRINGS}
    left = value[value["left_gate-allowed"]]
    intervals["saving"] = _by_namespace(left, "saving", "one", n_boot, seed)
    intervals["tier_accuracy"] = _template_ci(rows, "tier_ok", n_boot, seed)
    intervals["exact_value_accuracy"] = _template_ci(rows[rows.value_shaped], "exact", n_boot, seed)
    coverage = pd.DataFrame(
        [
            {
                "wiring": w,
                "tools_on": sum(r.is_on(t.id) for t in r.wireable),
                "value_lessons": len(value),
                "lessons": len(need[w]),
                "share": len(need[w]) / len(value),
                "low": intervals[f"leftover_{w}"].low,
                "high": intervals[f"leftover_{w}"].high,
            }
            for w, r in regs.items()
        ]
    )
    forbidden = tuple(sorted(t.id for t in source.registry.wireable if t.id in write_path_tools(source)))
    return CollapseStudy(
        lessons,
        ev,
        collapse_curve(lessons, source.registry),
        residual(lessons, source),
        costs,
        MappingProxyType(intervals),
        coverage,
        forbidden,
        rule,
        live,
    )


def study(lessons: Sequence[LabelledLesson], source: Source, *, n_boot: int = 1000, seed: int = 0) -> CollapseStudy:
    """The study without the live arm (the name before `run`)."""
    return run(lessons, source, n_boot=n_boot, seed=seed)
