"""The package's layering, read from the source (AST), function-local imports included: no import cycles, the
core (the flat pipeline in overlay_kit/) imports no study, surface, model client or Jupyter package, and each
core module imports only modules above it in `CORE_ORDER` (the data-flow order docs/architecture.md draws)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "overlay_kit"

# The pipeline, top to bottom: a module may import only modules listed before it.
CORE_ORDER = [
    "common",
    "defaults",
    "resources",
    "bundled",
    "metrics",
    "patternset",
    "headings",
    "anchor",
    "textguard",
    "display",
    "skill",
    "grammar",
    "seal",
    "tools",
    "prompt",
    "budget",
    "store",
    "injection",
    "gates",
    "facts",
    "retrieval",
    "touch",
    "selection",
    "anchoring",
    "resolve",
    "rebase",
    "evidence",
    "portable",
    "mine",
]
SHELLS = {"cli", "ipython", "__main__"}  # thin shells over everything: the CLI and the `%load_ext` magics
SUBPACKAGES = {"llm", "surfaces", "studies", "datasets"}  # above the core; the core never imports them
JUPYTER = {
    "IPython",
    "ipywidgets",
    "ipykernel",
    "jupyter",
    "jupyterlab",
    "altair",
    "anywidget",
    "nbformat",
    "overlay_widgets",
    "notebook",
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every module `path` imports (absolute names), at any depth of the file."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)  # `from . import x` imports module x
    return out


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for mod, path in files.items():
        # every module imports its parent packages anyway: an edge to one of them is no layering fact
        graph[mod] = {m for m in _imports(path) if m in files and m != mod and not mod.startswith(m + ".")}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _core(mod: str) -> str | None:
    parts = mod.split(".")
    return parts[1] if len(parts) == 2 and parts[1] not in SUBPACKAGES | SHELLS | {"_compat"} else None


def test_no_import_cycles_anywhere_in_the_package():
    assert _cycles(_graph()) == []


def test_cycle_detector_sees_a_function_local_cycle():
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def test_every_core_module_has_a_place_in_the_order():
    core = {c for m in _graph() if (c := _core(m))}
    assert core == set(CORE_ORDER), "add the module to CORE_ORDER (and docs/architecture.md)"


@pytest.mark.parametrize("module", CORE_ORDER)
def test_core_imports_only_modules_above_it(module):
    path = PACKAGE / f"{module}.py"
    # a core module may be a package of its own (overlay_kit/store/): every file of it, importing one another freely
    paths = [path] if path.exists() else sorted((PACKAGE / module).rglob("*.py"))
    assert paths, f"no module or package {module}"
    imported = set().union(*map(_imports, paths)) - {f"overlay_kit.{module}"}
    imported = {m for m in imported if not m.startswith(f"overlay_kit.{module}.")}
    above = set(CORE_ORDER[: CORE_ORDER.index(module)])
    ours = {m for m in imported if m.startswith("overlay_kit.")}
    for m in ours:
        parts = m.split(".")
        assert len(parts) >= 2, m
        assert parts[1] not in SUBPACKAGES | SHELLS, f"core module {module} imports {m}"
    own = {m.split(".")[1] for m in ours if _core(".".join(m.split(".")[:2]))}
    assert own <= above, f"{module} imports {sorted(own - above)}, which sit below it"
    external = {m.split(".")[0] for m in imported if not m.startswith("overlay_kit")}
    assert not external & JUPYTER, f"core module {module} imports Jupyter packages {sorted(external & JUPYTER)}"


def test_the_cli_imports_no_jupyter_package():
    external = {m.split(".")[0] for m in _imports(PACKAGE / "cli.py")}
    assert not external & JUPYTER


def test_the_architecture_doc_names_every_core_module_in_order():
    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = [line.split("`")[1] for line in doc.splitlines() if line.startswith("| `")]
    assert rows == CORE_ORDER


# ------------------------------------------------------------------------------- SQL lives in the store

SQL_HOME = "overlay_kit.store"  # the package: every module of it
# Until the "sims" branch moves deploy.store_tables' SELECTs into the store, deploy keeps its one SQL call.
# Remove this entry when that lands; the test then covers it too.
# peers drives skillmem, whose API is its own SQLite connection: SQL on another system's database, not ours.
SQL_ALLOWED = {"overlay_kit.studies.deploy", "overlay_kit.studies.peers"}
_SQL_CALLS = {"execute", "executemany", "executescript"}


def _sql_uses(source: str) -> list[str]:
    """`line: what` for every `.execute(`/`.executemany(`/`.executescript(` call and every `.conn` use."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _SQL_CALLS:
            out.append(f"{node.lineno}: .{node.func.attr}(")
        elif isinstance(node, ast.Attribute) and node.attr == "conn":
            out.append(f"{node.lineno}: .conn")
    return sorted(set(out), key=lambda s: (int(s.split(":")[0]), s))


def test_sql_lives_in_the_store():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        mod = _module_name(path)
        if mod == SQL_HOME or mod.startswith(SQL_HOME + ".") or mod in SQL_ALLOWED:
            continue
        uses = _sql_uses(path.read_text(encoding="utf-8"))
        if uses:
            found[str(path.relative_to(PACKAGE.parent))] = uses
    assert found == {}, f"SQL outside overlay_kit/store/ (add a store method instead): {found}"


def test_sql_detector_sees_execute_executemany_executescript_and_conn():
    src = (
        "store.conn.execute('SELECT 1')\nc.executemany('INSERT', [])\nc.executescript('')\nx = s.conn\n"
        "'execute'  # a string is no call\nrun.execute_plan()\n"
    )
    assert _sql_uses(src) == ["1: .conn", "1: .execute(", "2: .executemany(", "3: .executescript(", "4: .conn"]


def test_no_module_but_the_ipython_extension_imports_a_jupyter_package():
    """Studies, surfaces and the model client too: charts live in overlay_widgets.charts."""
    for path in PACKAGE.rglob("*.py"):
        if _module_name(path) == "overlay_kit.ipython":
            continue
        external = {m.split(".")[0] for m in _imports(path)}
        assert not external & JUPYTER, f"{_module_name(path)} imports {sorted(external & JUPYTER)}"
