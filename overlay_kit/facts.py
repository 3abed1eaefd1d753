"""Tier 0: learned facts a tool reads in one line, and the report that keeps an unread fact from passing as learned.

A tool opts in by declaring the namespaces it reads, then reads them through the accessor:

    @learns_from("priority_senders")
    def triage_inbox(messages, facts: Facts): ...
        vip = facts.get("priority_senders", default=frozenset())          # a member set
        hours = facts.get("escalation", "followup_hours", default=72,
                          scope=f"sender:{msg.sender}")                   # scoped, falls back to "user"

    facts = Facts(store, tool="triage_inbox")    # bound to a store, a scope chain and (optionally) a tool

`Facts.get(namespace, key=None, default=None, *, scope=None)`:

* with a `key`: that fact's value, looked up in `scope` first, then the bound scopes (default: the store's `read_scopes()`, `("user",)` for a store opened for no agent);
* without: the whole namespace. A set default (`frozenset()`) asks for *members* — the keys whose value is
  `true` (a later `false` in a narrower scope removes one); any other default asks for the key → value mapping
  (read-only). An empty namespace returns `default`.

A `Facts` bound to a tool refuses (`UndeclaredRead`) to read a namespace the tool did not declare, so a
declaration cannot silently drift from what the tool reads. Writes go through `overlay_kit.gates.learn`
(kind `fact`), never through this module.

**The silent no-op.** A fact written to a store that no tool reads looks exactly like successful learning.
`report(store, consumers)` lists every current fact with the tools that declare its namespace; a fact with
zero declared consumers is `inert` — reported as such, never as learned. Consumers come from the
`learns_from` decorator (`CONSUMERS`), from a mapping `{tool: [namespace, …]}`, or from a skill's
`metadata.gaia.tools[].learns_from` (`Consumers.from_skill`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .skill import Skill
    from .store import Fact, Store

__all__ = [
    "CONSUMERS",
    "Consumers",
    "FactLine",
    "FactReport",
    "Facts",
    "FactsError",
    "UndeclaredRead",
    "learns_from",
    "report",
]

_MISSING = object()


class FactsError(ValueError):
    """A consumer declaration or a fact read that is not allowed; names the tool, namespace or field."""


class UndeclaredRead(FactsError):
    """A tool read a namespace it does not declare in `learns_from`."""


def _names(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple, frozenset, set)) or not all(isinstance(v, str) and v.strip() for v in value):
        raise FactsError(f"{where}: learns_from must be a namespace or a list of non-empty namespace names")
    return tuple(sorted({v.strip() for v in value}))


class Consumers:
    """Which tool reads which tier-0 namespaces. Mutable on purpose: tools register as they are defined."""

    def __init__(self, declarations: Mapping[str, Iterable[str]] | None = None):
        self._by_tool: dict[str, frozenset[str]] = {}
        for tool, namespaces in (declarations or {}).items():
            self.declare(tool, *_names(namespaces, f"consumer {tool!r}"))

    def declare(self, tool: str, *namespaces: str) -> None:
        """`tool` reads `namespaces` (added to what it already declared)."""
        if not isinstance(tool, str) or not tool.strip():
            raise FactsError("a consumer needs a tool name")
        names = _names(list(namespaces), f"tool {tool!r}") if namespaces else ()
        self._by_tool[tool] = self._by_tool.get(tool, frozenset()) | frozenset(names)

    def learns_from(self, *namespaces: str, tool: str | None = None) -> Callable:
        """Decorator: declare that the decorated tool (its `__name__`, or `tool`) reads `namespaces`."""

        def wrap(fn):
            self.declare(tool or fn.__name__, *namespaces)
            fn.learns_from = self.namespaces(tool or fn.__name__)
            return fn

        return wrap

    def namespaces(self, tool: str) -> frozenset[str]:
        return self._by_tool.get(tool, frozenset())

    def readers(self, namespace: str) -> tuple[str, ...]:
        """The tools that declare `namespace`, sorted."""
        return tuple(sorted(t for t, ns in self._by_tool.items() if namespace in ns))

    @property
    def tools(self) -> tuple[str, ...]:
        return tuple(sorted(self._by_tool))

    def merged(self, *others: "Consumers") -> "Consumers":
        out = Consumers(self.to_dict())
        for other in others:
            for tool, ns in other.to_dict().items():
                out.declare(tool, *ns)
        return out

    def to_dict(self) -> dict[str, list[str]]:
        return {t: sorted(self._by_tool[t]) for t in sorted(self._by_tool)}

    @classmethod
    def from_skill(cls, skill: "Skill") -> "Consumers":
        """Declarations in a SKILL.md: `metadata.gaia.tools[i].learns_from: [namespace, …]`."""
        out = cls()
        gaia = ((skill.frontmatter.get("metadata") or {}).get("gaia") or {}) if skill.frontmatter else {}
        for i, item in enumerate(gaia.get("tools") or []):
            if isinstance(item, Mapping) and "learns_from" in item:
                where = f"{skill.path or skill.name}: metadata.gaia.tools[{i}].learns_from"
                out.declare(str(item.get("name")), *_names(item["learns_from"], where))
        return out

    def __repr__(self) -> str:
        return f"Consumers({self.to_dict()!r})"


CONSUMERS = Consumers()  # the process-wide registry the `learns_from` decorator fills


def learns_from(*namespaces: str, tool: str | None = None, registry: Consumers | None = None) -> Callable:
    """Decorator: the tool reads these tier-0 namespaces (registered in `registry`, default `CONSUMERS`)."""
    return (registry or CONSUMERS).learns_from(*namespaces, tool=tool)


class Facts:
    """The one-line tier-0 accessor, bound to a store, a scope chain and optionally the reading tool."""

    def __init__(
        self,
        store: "Store",
        scope: str | Iterable[str] | None = None,
        *,
        tool: str | None = None,
        consumers: Consumers | None = None,
    ):
        """`scope`: the chain, first scope first; None: the store's `read_scopes()` (its agent's own scope,
        then "user")."""
        self.store = store
        scope = store.read_scopes(scope) if hasattr(store, "read_scopes") else scope or "user"
        self.scopes = (scope,) if isinstance(scope, str) else tuple(scope)
        if not self.scopes or not all(isinstance(s, str) and s for s in self.scopes):
            raise FactsError("Facts needs at least one non-empty scope")
        self.tool = tool
        self.consumers = consumers if consumers is not None else CONSUMERS

    def _chain(self, scope: str | None) -> tuple[str, ...]:
        return tuple(dict.fromkeys(((scope,) if scope else ()) + self.scopes))

    def get(self, namespace: str, key: str | None = None, default: Any = None, *, scope: str | None = None) -> Any:
        if self.tool is not None and namespace not in self.consumers.namespaces(self.tool):
            raise UndeclaredRead(
                f"tool {self.tool!r} reads tier-0 namespace {namespace!r} without declaring it; "
                f"add learns_from={namespace!r} (declared: "
                f"{', '.join(sorted(self.consumers.namespaces(self.tool))) or 'none'})"
            )
        chain = self._chain(scope)
        if key is not None:
            for sc in chain:
                value = self.store.get_fact(namespace, key, _MISSING, sc)
                if value is not _MISSING:
                    return value
            return default
        rows = self.store.facts(namespace)
        view: dict[str, Any] = {}
        for sc in reversed(chain):  # the first scope of the chain wins
            view.update({f.key: f.value for f in rows if f.scope == sc})
        if not view:
            return default
        if isinstance(default, (set, frozenset)):
            return frozenset(k for k, v in view.items() if v is True)
        return MappingProxyType(view)


# ------------------------------------------------------------------------------------- the report


@dataclass(frozen=True)
class FactLine:
    """One current fact and the tools that declare its namespace. `inert` when there are none."""

    namespace: str
    key: str
    value: Any
    scope: str
    source: str
    created_at: str
    readers: tuple[str, ...]

    @property
    def inert(self) -> bool:
        return not self.readers

    @property
    def status(self) -> str:
        return "inert" if self.inert else "honored"

    def to_dict(self) -> dict:
        return {
            "namespace": self.namespace,
            "key": self.key,
            "value": self.value,
            "scope": self.scope,
            "source": self.source,
            "created_at": self.created_at,
            "status": self.status,
            "readers": list(self.readers),
        }


@dataclass(frozen=True)
class FactReport:
    lines: tuple[FactLine, ...]
    consumers: Mapping[str, tuple[str, ...]]

    @property
    def inert(self) -> tuple[FactLine, ...]:
        return tuple(x for x in self.lines if x.inert)

    @property
    def honored(self) -> tuple[FactLine, ...]:
        return tuple(x for x in self.lines if not x.inert)

    def namespaces(self) -> list[dict]:
        """Per namespace: how many facts, who honors them, inert or not."""
        out: dict[str, dict] = {}
        for x in self.lines:
            row = out.setdefault(
                x.namespace, {"namespace": x.namespace, "facts": 0, "readers": list(x.readers), "status": x.status}
            )
            row["facts"] += 1
        return list(out.values())

    def summary(self) -> list[str]:
        """One line per namespace, in the words a user will read (seed: "The honest cost of tier 0")."""
        lines = []
        for row in self.namespaces():
            n = row["facts"]
            what = f"{row['namespace']}: {n} fact{'s' if n != 1 else ''}"
            if row["readers"]:
                lines.append(f"{what} — honored by {', '.join(row['readers'])}")
            else:
                lines.append(
                    f"{what} — INERT: no tool declares learns_from={row['namespace']!r}; stored, but nothing reads it"
                )
        return lines

    def to_dict(self) -> dict:
        return {
            "facts": [x.to_dict() for x in self.lines],
            "namespaces": self.namespaces(),
            "summary": {"total": len(self.lines), "honored": len(self.honored), "inert": len(self.inert)},
            "consumers": {t: list(ns) for t, ns in self.consumers.items()},
        }


def report(store: "Store", consumers: Consumers | None = None) -> FactReport:
    """Every current fact in `store`, each with the tools that declare its namespace (inert when none)."""
    consumers = consumers if consumers is not None else CONSUMERS
    facts: list[Fact] = store.facts()
    lines = tuple(
        FactLine(
            f.namespace,
            f.key,
            f.value,
            f.scope,
            f.provenance.source,
            f.created_at.isoformat(timespec="seconds"),
            consumers.readers(f.namespace),
        )
        for f in facts
    )
    return FactReport(lines, MappingProxyType({t: tuple(ns) for t, ns in consumers.to_dict().items()}))
