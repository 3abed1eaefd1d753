"""SKILL.md → `Skill`: the Agent Skills format, GAIA's `metadata.gaia` extension, and discovery.

A skill file is YAML frontmatter between two `---` lines followed by a Markdown body. The body is kept
byte for byte (the anchorer needs it losslessly); the frontmatter never takes part in a body anchor.
Every problem is reported with the file and the 1-based line it sits on, and nothing is half-loaded:
`load_skill` either returns a complete, valid `Skill` or raises.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from difflib import get_close_matches
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from .anchor import AnchorError
from .anchor import parse as parse_sections
from .display import skill_html, skill_text
from .resources import dataset_path

__all__ = [
    "CAPABILITY_DOMAINS",
    "MAX_SKILL_BYTES",
    "Discovery",
    "Permission",
    "Problem",
    "Root",
    "Skill",
    "SkillError",
    "SkillFormatError",
    "SkillValidationError",
    "bundled_root",
    "check_skill",
    "default_roots",
    "discover",
    "find_skill",
    "load_skill",
    "parse_skill",
]

MAX_SKILL_BYTES = 2 * 1024 * 1024  # a SKILL.md is instructions, not a data file
SECURITY_TIERS = ("verified", "community", "experimental")
CAPABILITY_DOMAINS = frozenset({"filesystem", "shell", "database", "desktop", "env"})
PERMISSION_DOMAINS = CAPABILITY_DOMAINS | {"network", "mcp"}
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")  # used with fullmatch: `$` would accept a trailing newline
_PERMISSION = re.compile(r"(?P<domain>[a-z]+):(?P<action>[a-z_*]+)(?::(?P<scope>\S+))?")
_BREAK = re.compile(r"\r\n|\r|\n")  # the line breaks markdown-it (and so the anchorer) counts
_OPEN_FENCE = re.compile(r"---[ \t]*(?:\r\n|\r|\n|\Z)")
_CLOSE_FENCE = re.compile(r"(?<=[\r\n])---[ \t]*(?:\r\n|\r|\n|\Z)")
_ALLOWED_TOOL = re.compile(r"[^\s,()]+(?:\([^)]*\))?")  # `Read, Bash(git add:*)` → Read, Bash(git add:*)


class SkillError(ValueError):
    """A SKILL.md that cannot be used. Carries the path and, where known, the 1-based line and field."""

    def __init__(
        self, message: str, path: str | os.PathLike | None = None, line: int | None = None, field: str | None = None
    ):
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        self.message = message
        where = self.path or "<string>"
        if line is not None:
            where += f":{line}"
        if field:
            where += f" [{field}]"
        super().__init__(f"{where}: {message}")

    def __reduce__(self):  # survive pickling (joblib workers) with every field intact
        return _rebuild_error, (type(self), self.args, dict(self.__dict__))


def _rebuild_error(cls, args, state):
    err = cls.__new__(cls)
    err.args = args
    err.__dict__.update(state)
    return err


class SkillFormatError(SkillError):
    """The file cannot be read as a SKILL.md at all (binary, not UTF-8, too big, broken YAML, …)."""


class SkillValidationError(SkillError):
    """The file parses but breaks the Agent Skills or `metadata.gaia` rules; `problems` lists them all."""

    def __init__(self, problems: Sequence["Problem"], path: str | os.PathLike | None = None):
        self.problems = tuple(problems)
        first = self.problems[0]
        more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        super().__init__(first.message + more, path, first.line, first.field)


@dataclass(frozen=True)
class Problem:
    """One validation finding, located in the file."""

    message: str
    line: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        loc = f"line {self.line}" if self.line else "file"
        return f"{loc}{f' [{self.field}]' if self.field else ''}: {self.message}"


@dataclass(frozen=True)
class Permission:
    """`domain:action[:scope]`, e.g. `network:read` or `filesystem:write:./out/**`."""

    domain: str
    action: str
    scope: str | None = None

    @classmethod
    def parse(cls, text: str) -> "Permission":
        m = _PERMISSION.fullmatch(text.strip()) if isinstance(text, str) else None
        if not m:
            raise ValueError(f"permission {text!r} is not of the form domain:action[:scope]")
        return cls(m["domain"], m["action"], m["scope"])

    @property
    def capability_bearing(self) -> bool:
        return self.domain in CAPABILITY_DOMAINS

    def __str__(self) -> str:
        return f"{self.domain}:{self.action}" + (f":{self.scope}" if self.scope else "")


@dataclass(frozen=True)
class Skill:
    """An authored skill, immutable. `body` is the exact text after the frontmatter."""

    name: str
    description: str
    body: str
    path: Path | None = None
    frontmatter: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), compare=False)
    license: str | None = None
    compatibility: str | None = None
    allowed_tools: tuple[str, ...] = ()
    version: str | None = None
    permissions: tuple[Permission, ...] = ()
    security_tier: str = "experimental"
    tools: tuple[str, ...] = ()
    body_start_line: int = 1  # file line on which body line 1 sits
    root: str | None = None  # label of the discovery root that supplied it
    root_dir: str | None = None  # that root's directory, resolved (a discovered skill; None for a path given)

    @property
    def root_key(self) -> str | None:
        """Where this skill came from, as a lesson and the base registry record it: the root's label and, for a
        discovered skill, the root's directory (`project:/repo/.gaia/skills`), so a same-named skill of another
        project is another base (notebook 13's verdict: lessons keyed by name and root directory)."""
        return f"{self.root}:{self.root_dir}" if self.root and self.root_dir else self.root

    def from_root(self, recorded: str | None) -> bool:
        """Whether a recorded root (a lesson's `base_root`, a registry row's root) names the root this skill
        came from. A record of the label alone (written before roots were keyed by directory) matches any
        directory under that label, as it always did; an unrecorded root, or a skill from no root, matches."""
        return recorded is None or self.root is None or recorded in (self.root_key, self.root)

    @property
    def capability_bearing(self) -> bool:
        """Any filesystem / shell / database / desktop / env permission: no learned deltas allowed."""
        return any(p.capability_bearing for p in self.permissions)

    @property
    def instruction_only(self) -> bool:
        return not self.tools and not self.permissions

    @property
    def body_digest(self) -> str:
        return hashlib.sha256(self.body.encode("utf-8")).hexdigest()[:16]

    @property
    def directory(self) -> Path | None:
        return None if self.path is None else self.path.parent

    def _repr_html_(self) -> str:  # rich display in Jupyter (overlay_kit.display builds plain HTML)
        return skill_html(self)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(skill_text(self))


# --------------------------------------------------------------------------------------------- parsing


def _line_of(raw: bytes, offset: int) -> int:
    """1-based line holding byte `offset`, counting \\r\\n, \\r and \\n as the anchorer does."""
    return len(re.findall(rb"\r\n|\r|\n", raw[:offset])) + 1


def _read_text(path: Path) -> str:
    try:  # O_NONBLOCK: a FIFO (or device) named SKILL.md must not block discovery; only regular files are read
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise SkillFormatError("not a regular file (a FIFO, socket or device); skipped", path)
            raw = fh.read(MAX_SKILL_BYTES + 1)
    except OSError as exc:
        raise SkillFormatError(f"cannot read: {exc.strerror or exc}", path) from exc
    if len(raw) > MAX_SKILL_BYTES:
        raise SkillFormatError(
            f"file is larger than {MAX_SKILL_BYTES} bytes (the limit falls on this line); "
            "a SKILL.md is instructions, not data",
            path,
            _line_of(raw, MAX_SKILL_BYTES),
        )
    if b"\x00" in raw:
        raise SkillFormatError(
            "binary content (NUL byte); a SKILL.md must be UTF-8 text", path, _line_of(raw, raw.index(b"\x00"))
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillFormatError(
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})", path, _line_of(raw, exc.start)
        ) from exc
    return text[1:] if text.startswith("\ufeff") else text


def _check_anchorable(body: str, path: str | os.PathLike | None, body_start: int) -> None:
    """The body anchors within the anchorer's input bounds (sections, markdown-it work), else a format error
    naming the file, as the byte limit is. The parse is cached, so whoever anchors the body next pays nothing."""
    try:
        parse_sections(body)
    except AnchorError as exc:
        line = None if exc.line is None else body_start + exc.line - 1
        raise SkillFormatError(f"body cannot be anchored: {exc.message}", path, line) from exc


def split_frontmatter(text: str, path: str | os.PathLike | None = None) -> tuple[str, str, int]:
    """Return (frontmatter YAML, body, body_start_line). The body keeps its exact bytes.

    Lines break only at \\r\\n, \\r and \\n (as in markdown-it), so body line numbers agree with the anchorer's.
    """
    opening = _OPEN_FENCE.match(text)
    if not opening:
        raise SkillFormatError("missing YAML frontmatter: the file must start with a '---' line", path, 1)
    closing = _CLOSE_FENCE.search(text, opening.end())
    if not closing:
        raise SkillFormatError("frontmatter is never closed by a '---' line", path, 1)
    body_start = len(_BREAK.findall(text, 0, closing.end())) + 1
    if not closing.group().endswith(("\n", "\r")):  # the fence is the last line, without a line break
        body_start += 1
    return text[opening.end() : closing.start()], text[closing.end() :], body_start


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml when built with it: ~10x faster
    """`yaml.safe_load` semantics, plus: a repeated key is an error, and a bad date is a located error."""

    def construct_mapping(self, node, deep=False):
        seen: set = set()
        for key, _ in node.value:
            if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                if (key.tag, key.value) in seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"found duplicate key {key.value!r}",
                        key.start_mark,
                    )
                seen.add((key.tag, key.value))
        return super().construct_mapping(node, deep)

    def construct_yaml_timestamp(self, node):
        try:
            return super().construct_yaml_timestamp(node)
        except ValueError as exc:
            raise yaml.constructor.ConstructorError(
                None, None, f"invalid date {node.value!r}: {exc}", node.start_mark
            ) from exc


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _Loader.construct_yaml_timestamp)


@dataclass(frozen=True)
class _Frontmatter:
    data: dict
    lines: Mapping[str, int]  # dotted field path (and `path[i]` for list items) → file line
    scalars: Mapping[str, str]  # dotted field path → the scalar exactly as written (for `version`)


_LOCATED = ("metadata", "metadata.gaia")  # mappings whose keys get their own lines
_LISTS = ("allowed-tools", "metadata.gaia.permissions", "metadata.gaia.tools")


MAX_YAML_NODES = 100_000  # nodes after alias expansion: a 400-byte alias bomb expands to millions
MAX_YAML_CHARS = 2 * MAX_SKILL_BYTES  # scalar characters after expansion; no alias-free frontmatter gets here


def _expanded(node) -> tuple[int, int]:
    """(nodes, scalar characters) that `node` stands for once every alias is expanded, capped just past the
    limits; a recursive alias is over them. Memoised per node, so counting is linear in the written YAML."""
    sizes: dict[int, tuple[int, int]] = {}
    visiting: set[int] = set()
    cap = (MAX_YAML_NODES + 1, MAX_YAML_CHARS + 1)

    def size(n) -> tuple[int, int]:
        key = id(n)
        if key in sizes:
            return sizes[key]
        if key in visiting:
            return cap  # a recursive alias expands forever
        visiting.add(key)
        nodes, chars = 1, len(n.value) if isinstance(n, yaml.ScalarNode) else 0
        children = (
            n.value
            if isinstance(n, yaml.SequenceNode)
            else [c for kv in n.value for c in kv]
            if isinstance(n, yaml.MappingNode)
            else []
        )
        for child in children:
            a, b = size(child)
            nodes, chars = nodes + a, chars + b
            if nodes > cap[0] or chars > cap[1]:
                break
        visiting.discard(key)
        sizes[key] = (min(nodes, cap[0]), min(chars, cap[1]))
        return sizes[key]

    return size(node)


def _load_yaml(source: str, path, first_line: int) -> _Frontmatter:
    loader = _Loader(source)
    try:
        node = loader.get_single_node()
        if node is not None:
            nodes, chars = _expanded(node)
            if nodes > MAX_YAML_NODES or chars > MAX_YAML_CHARS:
                raise SkillFormatError(
                    f"YAML frontmatter expands through aliases past {MAX_YAML_NODES} nodes or "
                    f"{MAX_YAML_CHARS} characters (or recursively): an alias bomb, refused",
                    path,
                    first_line,
                )
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = first_line + mark.line if mark else first_line
        raise SkillFormatError(f"malformed YAML frontmatter: {exc.problem or exc}", path, line) from exc
    except yaml.YAMLError as exc:
        raise SkillFormatError(f"malformed YAML frontmatter: {exc}", path, first_line) from exc
    except RecursionError as exc:
        raise SkillFormatError("malformed YAML frontmatter: nested too deeply", path, first_line) from exc
    finally:
        loader.dispose()
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SkillFormatError(
            f"frontmatter must be a mapping of fields, not a {type(data).__name__}", path, first_line
        )
    lines: dict[str, int] = {}
    scalars: dict[str, str] = {}

    def walk(mapping: yaml.MappingNode, prefix: str) -> None:  # bounded: only the levels we validate
        for key, value in mapping.value:
            if not isinstance(key, yaml.ScalarNode):
                continue
            name = prefix + key.value
            lines.setdefault(name, first_line + key.start_mark.line)
            if isinstance(value, yaml.ScalarNode):
                scalars.setdefault(name, value.value)
            elif isinstance(value, yaml.MappingNode) and name in _LOCATED:
                walk(value, name + ".")
            elif isinstance(value, yaml.SequenceNode) and name in _LISTS:
                for i, item in enumerate(value.value):
                    lines.setdefault(f"{name}[{i}]", first_line + item.start_mark.line)

    if isinstance(node, yaml.MappingNode):
        walk(node, "")
    return _Frontmatter(data, MappingProxyType(lines), MappingProxyType(scalars))


def _strings(value: Any) -> tuple[str, ...] | None:
    """A YAML list of strings, or one space/comma separated string (`Read, Bash(git add:*)`)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(_ALLOWED_TOOL.findall(value))
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def parse_skill(
    text: str, path: str | os.PathLike | None = None, *, root: str | None = None, check_directory: bool = True
) -> tuple[Skill | None, list[Problem]]:
    """Parse SKILL.md text; return the skill (None if any problem) and every validation problem.

    Format errors (no frontmatter, broken YAML, a list as frontmatter) raise `SkillFormatError`.
    """
    fm_text, body, body_start = split_frontmatter(text, path)
    fm = _load_yaml(fm_text, path, 2)
    _check_anchorable(body, path, body_start)
    data = fm.data
    problems: list[Problem] = []

    def bad(field_name: str, message: str, at: str | None = None) -> None:
        line = fm.lines.get(at or field_name, fm.lines.get(field_name, 1))
        problems.append(Problem(message, line, field_name))

    name = data.get("name")
    if not isinstance(name, str) or not name:
        bad("name", "required field 'name' is missing or not a string")
    else:
        if len(name) > 64:
            bad("name", f"name is {len(name)} characters; at most 64 are allowed")
        if not _NAME.fullmatch(name):
            bad(
                "name",
                f"name {name!r} must be lowercase letters a-z, digits and single hyphens, "
                "not starting or ending with a hyphen",
            )
        if check_directory and path is not None and Path(path).name == "SKILL.md":
            directory = Path(path).parent.name
            if unicodedata.normalize("NFC", directory) != name:
                bad("name", f"name {name!r} must equal its directory name {directory!r}")

    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        bad("description", "required field 'description' is missing, empty or not a string")
    elif len(description) > 1024:
        bad("description", f"description is {len(description)} characters; at most 1024 are allowed")

    license_ = data.get("license")
    if license_ is not None and not isinstance(license_, str):
        bad("license", "license must be a string")
    compatibility = data.get("compatibility")
    if compatibility is not None and (not isinstance(compatibility, str) or not 1 <= len(compatibility) <= 500):
        bad("compatibility", "compatibility must be a string of 1-500 characters")
    allowed_tools = _strings(data.get("allowed-tools"))
    if allowed_tools is None:
        bad("allowed-tools", "allowed-tools must be a string or a list of strings")
        allowed_tools = ()

    metadata = data.get("metadata")
    if metadata is None:
        metadata = {}
    elif not isinstance(metadata, dict):
        bad("metadata", "metadata must be a mapping")
        metadata = {}
    gaia = metadata.get("gaia")
    if gaia is None:
        gaia = {}
    elif not isinstance(gaia, dict):
        bad("metadata.gaia", "metadata.gaia must be a mapping")
        gaia = {}

    # GAIA documents `version` at the top level; issue 2 puts it under metadata.gaia. Accept both, as written
    # (`1.10` stays "1.10", not the float 1.1), and refuse two different values.
    version = None
    for key in ("metadata.gaia.version", "version"):
        value = gaia.get("version") if key != "version" else data.get("version")
        if value is None:
            continue
        if isinstance(value, (dict, list)):
            bad(key, "version must be a string such as '1.2.0'")
        elif version is None:
            version = fm.scalars.get(key, str(value))
        elif fm.scalars.get(key, str(value)) != version:
            bad(key, f"version {fm.scalars.get(key)!r} contradicts metadata.gaia.version {version!r}")

    permissions: list[Permission] = []
    raw_perms = gaia.get("permissions")
    if raw_perms is None:
        raw_perms = []
    elif not isinstance(raw_perms, list):
        bad("metadata.gaia.permissions", "permissions must be a list of 'domain:action[:scope]' strings")
        raw_perms = []
    for i, item in enumerate(raw_perms):
        at = f"metadata.gaia.permissions[{i}]"
        try:
            perm = Permission.parse(item)
        except ValueError as exc:
            bad("metadata.gaia.permissions", str(exc), at)
            continue
        if perm.domain not in PERMISSION_DOMAINS:
            bad(
                "metadata.gaia.permissions",
                f"unknown permission domain {perm.domain!r} in {item!r}; "
                f"known: {', '.join(sorted(PERMISSION_DOMAINS))}",
                at,
            )
            continue
        permissions.append(perm)

    tier = gaia.get("security_tier", "experimental")
    if tier not in SECURITY_TIERS:
        bad("metadata.gaia.security_tier", f"security_tier {tier!r} must be one of {', '.join(SECURITY_TIERS)}")

    tools: list[str] = []
    raw_tools = gaia.get("tools")
    if raw_tools is None:
        raw_tools = []
    elif not isinstance(raw_tools, list):
        bad("metadata.gaia.tools", "tools must be a list of names or of mappings with a 'name'")
        raw_tools = []
    for i, item in enumerate(raw_tools):  # a name, or a typed declaration {name, description, parameters}
        at = f"metadata.gaia.tools[{i}]"
        tool = item.get("name") if isinstance(item, dict) else item
        if not isinstance(tool, str) or not tool or any(c.isspace() for c in tool):
            bad("metadata.gaia.tools", f"tool {i + 1} must be a name without spaces, or a mapping with one", at)
        elif tool in tools:
            bad("metadata.gaia.tools", f"tool {tool!r} is declared twice", at)
        else:
            tools.append(tool)

    if problems:
        return None, problems
    skill = Skill(
        name=name,
        description=description,
        body=body,
        path=None if path is None else Path(path),
        frontmatter=MappingProxyType(data),
        license=license_,
        compatibility=compatibility,
        allowed_tools=allowed_tools,
        version=version,
        permissions=tuple(permissions),
        security_tier=tier,
        tools=tuple(tools),
        body_start_line=body_start,
        root=root,
    )
    return skill, []


def _skill_file(path: str | os.PathLike) -> Path:
    p = Path(path)
    return p / "SKILL.md" if p.is_dir() else p


def load_skill(path: str | os.PathLike, *, root: str | None = None) -> Skill:
    """Load a skill directory or SKILL.md file; raise `SkillError` (with path and line) on any problem."""
    file = _skill_file(path)
    skill, problems = parse_skill(_read_text(file), file, root=root)
    if problems:
        raise SkillValidationError(problems, file)
    return skill


def read_unvalidated(path: str | os.PathLike) -> tuple[dict, str]:
    """(frontmatter, body) of a SKILL.md without the Agent Skills / metadata.gaia checks — for tools that need
    only the body (a rebase over real histories). Format errors (unreadable, no frontmatter, broken YAML,
    an alias bomb) still raise `SkillFormatError`."""
    file = _skill_file(path)
    fm_text, body, body_start = split_frontmatter(_read_text(file), file)
    data = _load_yaml(fm_text, file, 2).data
    _check_anchorable(body, file, body_start)
    return (dict(data) if isinstance(data, Mapping) else {}), body


def check_skill(path: str | os.PathLike) -> list[SkillError]:
    """Every problem with one skill as a list of located errors (empty when valid). Never raises."""
    file = _skill_file(path)
    try:
        _, problems = parse_skill(_read_text(file), file)
    except SkillError as exc:
        return [exc]
    return [SkillError(p.message, file, p.line, p.field) for p in problems]


# ------------------------------------------------------------------------------------------- discovery


@dataclass(frozen=True)
class Root:
    """A discovery root. Roots are searched in order; the first one holding a name wins."""

    label: str
    path: Path
    read_only: bool = False  # an import root: its skills are forced to tier `experimental`


@dataclass(frozen=True)
class Discovery:
    skills: Mapping[str, Skill]
    shadowed: tuple[tuple[Skill, Skill], ...]  # (hidden, winner)
    errors: tuple[SkillError, ...]


SKILLS_ENV = "OVERLAY_KIT_SKILLS"  # extra discovery roots, after project and agent


def default_roots(
    project: str | os.PathLike = ".", *, agent: str | os.PathLike | None = None, home: str | os.PathLike | None = None
) -> list[Root]:
    """The Agent Skills precedence: project, agent-bundled, `$OVERLAY_KIT_SKILLS` (directories separated by
    `os.pathsep`, e.g. `datasets/skills`), user, installed, then Claude Code imports."""
    project, home = Path(project), Path(home) if home else Path.home()
    roots = [Root("project", project / ".gaia" / "skills")]
    if agent is not None:
        roots.append(Root("agent", Path(agent) / "skills"))
    roots += [Root("env", Path(d).expanduser()) for d in os.environ.get(SKILLS_ENV, "").split(os.pathsep) if d]
    roots += [
        Root("user", home / ".gaia" / "skills"),
        Root("installed", home / ".gaia" / "installed-skills"),
        Root("claude-project", project / ".claude" / "skills", read_only=True),
        Root("claude-user", home / ".claude" / "skills", read_only=True),
    ]
    return roots


def _inside(child: Path, parent: Path) -> bool:
    try:
        child.relative_to(parent)
        return True
    except ValueError:
        return False


def discover(roots: Iterable[Root]) -> Discovery:
    """Find every `<root>/<name>/SKILL.md`. No path may escape its root (symlinks, `..`)."""
    found: dict[str, Skill] = {}
    shadowed: list[tuple[Skill, Skill]] = []
    errors: list[SkillError] = []
    for root in roots:
        try:
            if not root.path.is_dir():
                continue
            real_root = root.path.resolve()
            entries = sorted(root.path.iterdir())
        except OSError as exc:
            errors.append(SkillFormatError(f"cannot list skill root: {exc.strerror or exc}", root.path))
            continue
        for entry in entries:
            file = entry / "SKILL.md"
            try:
                if not entry.is_dir() or not file.exists():
                    continue
                escapes = not _inside(file.resolve(), real_root)
            except (OSError, RuntimeError) as exc:  # unreadable, or a symlink loop
                errors.append(SkillFormatError(f"cannot resolve: {exc}", file))
                continue
            if escapes:
                errors.append(SkillError(f"resolves outside its root {root.path} (symlink or '..'); ignored", file))
                continue
            try:
                skill = replace(load_skill(file, root=root.label), root_dir=str(real_root))
            except SkillError as exc:
                errors.append(exc)
                continue
            if root.read_only and skill.security_tier != "experimental":
                skill = replace(skill, security_tier="experimental")
            if skill.name in found:
                shadowed.append((skill, found[skill.name]))
            else:
                found[skill.name] = skill
    return Discovery(MappingProxyType(found), tuple(shadowed), tuple(errors))


def bundled_root() -> Root:
    """The example skills shipped with overlay_kit (datasets/skills): the last place a name is looked up."""
    return Root("bundled", dataset_path("skills"))


def find_skill(ref: str | os.PathLike, roots: Iterable[Root] | None = None) -> Skill:
    """A path to a skill directory or SKILL.md, else a name looked up through the discovery roots and, last, the
    bundled examples (`bundled_root`: `overlay-kit resolve triage-inbox` works from any directory)."""
    p = Path(ref)
    if p.exists():
        return load_skill(p)
    roots = [*(default_roots() if roots is None else roots), bundled_root()]
    found = discover(roots)
    if str(ref) in found.skills:
        return found.skills[str(ref)]
    close = get_close_matches(str(ref), found.skills, n=3)
    hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
    searched = ", ".join(f"{r.label} {r.path}" + ("" if r.path.is_dir() else " (absent)") for r in roots)
    raise SkillError(
        f"no skill file and no discovered skill named {str(ref)!r}{hint}; roots searched in order: "
        f"{searched}; to add a root, set ${SKILLS_ENV} to one or more directories (separated by "
        f"{os.pathsep!r}), searched after the project and agent roots and before the user's own",
        ref,
    )
