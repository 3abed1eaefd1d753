"""What ships around the code: the documented pip line, Binder's pins, `make lab`'s root, `make report`'s output."""

from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def make_n(target: str) -> str:
    """The commands `make <target>` would run, continuation lines joined (a dry run: nothing is installed)."""
    out = subprocess.run(
        ["make", "--no-print-directory", "-n", "-o", "/nonexistent/.installed", target, "VENV=/nonexistent"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return out.stdout.replace("\\\n", " ")


def makefile_default(name: str) -> str:
    return re.search(rf"^{name}\s*\?=\s*(\S+)", (ROOT / "Makefile").read_text(), re.MULTILINE)[1]


@pytest.mark.parametrize("doc", ["README.md", "docs/install.md"])
def test_the_documented_pip_line_installs_the_makefile_torch_pin_from_its_index(doc):
    text = (ROOT / doc).read_text(encoding="utf-8")
    (line,) = re.findall(r"`(pip install [^`]*-e \"\.\[lab\]\")`", text)
    assert f"--extra-index-url {makefile_default('TORCH_INDEX')} " in line, line
    assert f" {makefile_default('TORCH_SPEC')} " in line, line


def _pin_module():
    spec = importlib.util.spec_from_file_location("binder_pin", ROOT / "binder" / "pin.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_binder_pins_the_lab_closure_at_the_installed_versions():
    pins = _pin_module().closure()
    names = {canonicalize_name(n) for n in pins}
    assert {"jupyterlab", "ipywidgets", "altair", "sentence-transformers", "torch", "jupyter-server"} <= names
    assert not {"overlay-kit", "pytest", "hypothesis", "nbval", "playwright", "dask", "anywidget"} & names
    lines = (ROOT / "binder" / "constraints.txt").read_text().splitlines()
    constrained = {
        canonicalize_name(n): v for n, v in (ln.split("==") for ln in lines if ln and not ln.startswith("#"))
    }
    # a later `make venv` may resolve newer releases (then rerun binder/pin.py); what must hold is that every
    # pin is exact and the shipped stack is pinned: the Makefile's torch build, the altair the notebooks store
    assert all(re.fullmatch(r"[0-9][0-9A-Za-z.+!-]*", v) for v in constrained.values()), constrained
    assert {"jupyterlab", "ipywidgets", "altair", "vl-convert-python", "torch", "sentence-transformers"} <= set(
        constrained
    )
    assert f"torch=={constrained['torch']}".split("+")[0] == makefile_default("TORCH_SPEC")
    assert constrained["altair"].startswith("5.")  # Vega-Lite 5: what JupyterLab 4 draws
    missing = sorted(names - set(constrained))  # a dependency added since the last pin.py (py3langid once)
    assert not missing, f"binder/constraints.txt lacks {missing}: rerun .venv/bin/python binder/pin.py"
    requirements = (ROOT / "binder" / "requirements.txt").read_text().splitlines()
    assert "-c constraints.txt" in requirements  # pip reads a nested file relative to the requirements file


def test_make_lab_serves_the_repository_root_so_the_notebooks_links_resolve():
    (command,) = [ln for ln in make_n("lab").splitlines() if " lab " in ln and "jupyter" in ln]
    args = shlex.split(command)
    (root,) = [a.split("=", 1)[1] for a in args if a.startswith("--ServerApp.root_dir=")]
    assert Path(root) == ROOT
    assert args[-1].endswith(".ipynb") and (Path(root) / args[-1]).is_file()
    links = 0
    for path in NOTEBOOKS:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "markdown":
                continue
            for target in re.findall(r"\]\(([^)#\s]+)", cell.source):
                if re.match(r"[a-z]+:", target):
                    continue
                resolved = (path.parent / target).resolve()
                assert resolved.is_file() and resolved.is_relative_to(root), f"{path.name}: {target}"
                links += 1
    assert links >= 3


def test_make_report_is_full_and_report_quick_is_not():
    full, quick = (
        next(ln for ln in make_n(t).splitlines() if "overlay_widgets.report" in ln) for t in ("report", "report-quick")
    )
    assert full.startswith("FULL=1 ") and "--execute" in full
    assert "FULL=" not in quick and "--execute" in quick


def test_the_report_prints_progress_and_its_pages_load_nothing_from_the_network(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "overlay_widgets.report", "--output-dir", str(tmp_path), *map(str, NOTEBOOKS)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    n = len(NOTEBOOKS)
    for i, (path, line) in enumerate(zip(NOTEBOOKS, lines), 1):
        assert re.fullmatch(rf"\[{i}/{n}\] {re.escape(path.name)} … \d+\.\d s → .*{path.stem}\.html", line), line
    assert re.fullmatch(rf"{n} notebooks in \d+\.\d s", lines[n]), lines[n:]
    for path in NOTEBOOKS:
        html = (tmp_path / f"{path.stem}.html").read_text(encoding="utf-8")
        assert not re.search(r"<(script|link|img)\b[^>]*\b(src|href)=\"(https?:)?//", html), path.name
        assert not re.search(r"mathjax|mermaid|cdnjs|jsdelivr|unpkg", html, re.IGNORECASE), path.name
