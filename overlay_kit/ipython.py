"""`%load_ext overlay_kit`: magics over the public API, for a notebook or an IPython shell.

    %overlay_db [PATH] [--research] [--auto-approve]   open (or create) an overlay store; returns the Store
    %deltas [SKILL] [--pending|--orphaned|--archived|--all] [--superseded] [--diff]
                                                        the deltas as a table (anchor state where the skill
                                                        is known); --diff adds authored → effective
    %resolve SKILL [--goal TEXT] [--no-learned-skills] [--scope S] [--ceiling N] [--tau T] [--embedder E]
                                                        the EffectiveSkill (learned lines marked, notes)
    %%lesson SKILL [--kind K] [--section S] [--source SRC] [--research] [--scope S] [--evidence TEXT]
    <YAML payload>                                      a DRY RUN through the gates: what `learn` would
                                                        decide (refused / routed / staged / quarantined),
                                                        nothing written

SKILL is a path, a discovered name, or the name of a `Skill` variable in the user namespace; a skill
named once is remembered, so later listings show its anchors' states. `%deltas` and `%resolve` take the
CLI's own flags (they are parsed by the CLI's parsers). The `%%lesson` cell is a YAML mapping: `kind`,
`section`, `source`, `evidence`, `scope` and `turns` may be given there instead of as flags, every other key
is the payload; a cell that is plain text is a preference's body. This is the only core module that imports
IPython, and `overlay_kit/__init__.py` imports it only when the extension is loaded.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

import yaml
from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class

from . import gates
from .defaults import SHIPPED
from .display import DeltaTable, UnifiedDiff
from .skill import Skill, SkillError, find_skill
from .store import Store, StoreError, default_db_path

__all__ = ["OverlayMagics", "load_ipython_extension", "unload_ipython_extension"]

LESSON_META = ("kind", "section", "source", "evidence", "scope", "turns")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # a usage error in a magic, not a SystemExit of the kernel
        raise UsageError(f"{self.prog}: {message}")

    def exit(self, status=0, message=None):  # after --help
        raise UsageError(message or "(usage shown above)")


def _cli_parser(verb: str) -> argparse.ArgumentParser:
    """The CLI's own parser for `verb` (one contract for both shells)."""
    from . import cli

    root = _Parser(prog="%")
    sub = root.add_subparsers(dest="verb", parser_class=_Parser)
    getattr(cli, f"register_{verb}")(sub)
    return root


def _parse(verb: str, line: str) -> argparse.Namespace:
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"%{verb}: {exc}") from None
    return _cli_parser(verb).parse_args([verb, *words])


@magics_class
class OverlayMagics(Magics):
    """The overlay magics; holds the open store and the skills named so far."""

    def __init__(self, shell=None):
        super().__init__(shell)
        self.store: Store | None = None
        self.skills: dict[str, Skill] = {}

    # ------------------------------------------------------------------------------------- helpers

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None

    def _store(self, db: str | None = None) -> Store:
        if db:
            return self.open(db)
        if self.store is None:
            default = default_db_path()
            if not default.exists():
                raise UsageError(
                    f"no overlay store is open: run %overlay_db PATH (the default {default} does not exist)"
                )
            self.open(default)
            print(
                f"overlay store {default} (the default: $OVERLAY_KIT_DB, else ~/.overlay_kit/overlay.db); "
                "%overlay_db PATH opens another"
            )
        return self.store

    def open(self, path, *, research: bool = False, auto_approve: bool = SHIPPED.auto_approve) -> Store:
        try:
            store = Store.open(path, research=research, auto_approve=auto_approve)
        except StoreError as exc:
            raise UsageError(str(exc)) from None
        self.close()
        self.store = store
        return store

    def skill(self, ref: str) -> Skill:
        """A path, a discovered name, a `Skill` variable, or a skill named earlier in this session."""
        value = self.shell.user_ns.get(ref) if self.shell is not None and ref.isidentifier() else None
        if isinstance(value, Skill):
            found = value
        elif ref in self.skills and not Path(ref).exists():
            found = self.skills[ref]
        else:
            try:
                found = find_skill(ref)
            except SkillError as exc:
                raise UsageError(str(exc)) from None
        self.skills[found.name] = found
        return found

    def _skill_name(self, ref: str | None) -> str | None:
        if ref is None:
            return None
        try:
            return self.skill(ref).name
        except UsageError:
            return ref  # deltas outlive their base: a name that no longer resolves is still listable

    # -------------------------------------------------------------------------------------- magics

    @line_magic
    def overlay_db(self, line: str = ""):
        """%overlay_db [PATH] [--research] [--auto-approve]: open (creating/migrating) an overlay store."""
        p = _Parser(prog="%overlay_db")
        p.add_argument("path", nargs="?")
        p.add_argument("--research", action="store_true")
        p.add_argument("--auto-approve", action="store_true")
        args = p.parse_args(shlex.split(line))
        store = self.open(args.path or default_db_path(), research=args.research, auto_approve=args.auto_approve)
        counts = ", ".join(f"{n} {s}" for s, n in sorted(store.counts().items())) or "no deltas yet"
        print(f"overlay store {store.path}: {counts}")
        return store

    @line_magic
    def deltas(self, line: str = ""):
        """%deltas [SKILL] [--pending|--orphaned|--archived|--all] [--superseded] [--diff] [--limit N] [--after ID]
        [--db DB]"""
        from .cli import DELTA_FILTERS, effective_diff

        args = _parse("deltas", line)
        store = self._store(args.db)
        name = self._skill_name(args.skill)
        rows = list(
            store.iter_deltas(
                name,
                status=DELTA_FILTERS[args.which],
                include_superseded=args.superseded,
                after=args.after,
                limit=args.limit,
            )
        )
        if args.json:
            return {"db": store.path, "skill": name, "filter": args.which, "deltas": [d.to_dict() for d in rows]}
        bodies = tuple((n, s.body) for n, s in self.skills.items())
        table = DeltaTable(
            tuple(rows), f"{args.which} deltas" + (f" of {name}" if name else "") + f" ({len(rows)})", bodies
        )
        if not args.diff:
            return table
        if args.skill is None:
            raise UsageError("%deltas --diff needs SKILL")
        from IPython.display import display

        display(table)
        return UnifiedDiff(effective_diff(self.skill(args.skill), store))

    @line_magic
    def resolve(self, line: str = ""):
        """%resolve SKILL [--goal TEXT] [--no-learned-skills] [--scope S] [--ceiling N] [--tau T] [--embedder E]"""
        from .resolve import resolve

        args = _parse("resolve", line)
        skill = self.skill(args.skill)
        store = (
            self._store(args.db)
            if args.learned and (args.db or self.store is not None or default_db_path().exists())
            else None
        )
        eff = resolve(
            skill,
            store,
            goal=args.goal,
            scope=args.scope or "user",
            learned=args.learned,
            embedder=args.embedder,
            tau=args.tau,
            ceiling=SHIPPED.ceiling if args.ceiling is None else args.ceiling,
        )
        return {"db": store.path if store else None, **eff.to_dict()} if args.json else eff

    @cell_magic
    def lesson(self, line: str, cell: str):
        """%%lesson SKILL [--kind K] [--section S] [--source SRC] [--research] [--scope S] [--evidence TEXT]

        The cell holds the payload (YAML); the gates decide and nothing is written."""
        p = _Parser(prog="%%lesson")
        p.add_argument("skill")
        p.add_argument("--kind")
        p.add_argument("--section")
        p.add_argument("--source")
        p.add_argument("--scope")
        p.add_argument("--evidence")
        p.add_argument("--research", action="store_true", default=None)
        args = p.parse_args(shlex.split(line))
        try:
            data = yaml.safe_load(cell) if cell.strip() else None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (cell line {mark.line + 1})" if mark is not None else ""
            raise UsageError(f"%%lesson: the cell is not YAML{where}: {getattr(exc, 'problem', exc)}") from None
        if data is None:
            raise UsageError("%%lesson: the cell is empty; write the payload as YAML (e.g. `body: …`)")
        if not isinstance(data, dict):
            data = {"body": cell.strip()}
        meta = {k: data.pop(k) for k in LESSON_META if k in data}
        kind = args.kind or meta.get("kind") or "preference"
        source = args.source or meta.get("source") or "user_instruction"
        provenance = {"source": source, "turns": list(meta.get("turns") or [])}
        skill = self.skill(args.skill)
        return gates.check(
            self.store,
            skill,
            kind,
            data,
            section=args.section or meta.get("section"),
            provenance=provenance,
            scope=args.scope or meta.get("scope") or "user",
            evidence=args.evidence or meta.get("evidence"),
            research=args.research,
        )


def load_ipython_extension(ipython) -> None:
    ipython.register_magics(OverlayMagics(ipython))


def unload_ipython_extension(ipython) -> None:
    magics = ipython.magics_manager.registry.get("OverlayMagics")
    if magics is not None:
        magics.close()
