"""The Makefile's install path: CPU torch from TORCH_INDEX by default, and an index that does not answer never
breaks an offline install (here pip finds the pinned CPU wheel in its configured wheelhouse)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def make(*args: str, env: dict | None = None, timeout: int = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_torch_comes_from_the_cpu_index_by_default():
    out = make("-n", "torch", "VENV=/nonexistent").stdout
    assert 'index="https://download.pytorch.org/whl/cpu"' in out and '"torch==2.13.0"' in out


def test_binder_pins_the_cpu_build_and_signs_the_notebooks():
    reqs = (ROOT / "binder" / "requirements.txt").read_text()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in reqs and "torch==2.13.0+cpu" in reqs
    assert "jupyter trust notebooks/*.ipynb" in (ROOT / "binder" / "postBuild").read_text()
    assert os.access(ROOT / "binder" / "postBuild", os.X_OK) and os.access(ROOT / "binder" / "start", os.X_OK)


def _local_cpu_wheel() -> bool:
    links = (
        subprocess.run(
            [sys.executable, "-m", "pip", "config", "get", "global.find-links"], capture_output=True, text=True
        ).stdout.split()
        + os.environ.get("PIP_FIND_LINKS", "").split()
    )
    return any(re.match(r"torch-2\.13\.0\+cpu-", p.name) for d in links if Path(d).is_dir() for p in Path(d).iterdir())


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("OVERLAY_KIT_INSTALL_TEST") != "1",
    reason="slow (~4.5 min on 2 cores: installs torch into a scratch venv); OVERLAY_KIT_INSTALL_TEST=1 runs it",
)
@pytest.mark.skipif(
    not _local_cpu_wheel(),
    reason="needs the pinned CPU torch wheel in pip's configured find-links (this test must not download torch)",
)
def test_make_torch_falls_back_when_the_index_does_not_answer(tmp_path):
    venv = tmp_path / "venv"
    run = make(
        "torch", f"VENV={venv}", "TORCH_INDEX=http://127.0.0.1:9/whl/cpu", f"PYTHON={sys.executable}", timeout=900
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "!!! TORCH_INDEX http://127.0.0.1:9/whl/cpu does not answer" in run.stdout
    version = subprocess.run(
        [venv / "bin" / "python", "-c", "import torch; print(torch.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert version == "2.13.0+cpu"


def test_make_lab_signs_the_notebooks_and_finds_the_examples_by_name():
    out = make("-n", "-o", "/nonexistent/.installed", "lab", "VENV=/nonexistent").stdout
    assert "/nonexistent/bin/jupyter trust notebooks/*.ipynb" in out
    assert f"OVERLAY_KIT_SKILLS={ROOT}/datasets/skills" in out and "jupyter lab" in out
