"""A plain (non-editable) install finds everything it needs: built as a wheel, installed into a fresh venv, run
from a folder outside the checkout. Dependencies come from this environment (a path entry, not a reinstall)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> tuple[Path, str]:
    """The wheel, and everything the build printed."""
    tmp = tmp_path_factory.mktemp("wheel")
    source, wheels = tmp / "source", tmp / "wheels"  # built from a copy: the build leaves nothing in the checkout
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv*", "build", "*.egg-info", "__pycache__", ".hypothesis", "artifacts"
        ),
        symlinks=True,
    )
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", wheels, source],
        check=True,
        capture_output=True,
        text=True,
    )
    (whl,) = wheels.glob("overlay_kit-*.whl")
    return whl, build.stdout + build.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory, wheel):
    tmp = tmp_path_factory.mktemp("install")
    env_dir = tmp / "venv"
    venv.create(env_dir, with_pip=False)
    py = env_dir / "bin" / "python"
    purelib = subprocess.run(
        [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(purelib, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # this env's dependencies
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", py, "install", "--no-deps", "-q", wheel[0]],
        check=True,
        capture_output=True,
    )
    work = tmp / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)} | {
        "HOME": str(tmp),
        "OVERLAY_KIT_DB": str(tmp / "o.db"),
    }
    return py, work, env


def test_the_installed_package_is_not_the_checkout(installed):
    py, work, env = installed
    where = subprocess.run(
        [py, "-c", "import overlay_kit; print(overlay_kit.__file__)"],
        cwd=work,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert str(ROOT) not in where and "site-packages" in where


def test_the_installed_cli_resolves_a_shipped_skill(installed):
    py, work, env = installed
    skill = "from overlay_kit.resources import dataset_path; print(dataset_path('skills', 'triage-inbox'))"
    path = subprocess.run([py, "-c", skill], cwd=work, env=env, check=True, capture_output=True, text=True).stdout
    assert str(ROOT) not in path
    out = subprocess.run(
        [py, "-m", "overlay_kit.cli", "resolve", path.strip()], cwd=work, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "# Triage inbox" in out.stdout and "## Reading the inbox" in out.stdout


def test_the_installed_studies_find_their_data(installed):
    py, work, env = installed
    code = (
        "from overlay_kit.studies import lessons, threshold\n"
        "print(len(threshold.load_corpus()), len(lessons.load_corpus()), len(lessons.load_source().domains))"
    )
    out = subprocess.run([py, "-c", code], cwd=work, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    pairs, lessons_n, domains = map(int, out.stdout.split())
    assert pairs > 100 and lessons_n > 50 and domains >= 3


def test_the_wheel_builds_without_a_setuptools_warning(wheel):
    """No deprecated license table, no data folder setuptools would call an unlisted package."""
    _, output = wheel
    assert not re.search(r"\w+Warning: |is deprecated", output), output


def test_the_wheel_declares_an_spdx_license_and_its_classifiers(wheel):
    with zipfile.ZipFile(wheel[0]) as z:
        names = z.namelist()
        meta = Parser().parsestr(z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode())
    assert meta["License-Expression"] == "MIT" and meta["License-File"] == "LICENSE"
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    classifiers = meta.get_all("Classifier")
    assert {f"Programming Language :: Python :: 3.{v}" for v in (10, 11, 12, 13)} <= set(classifiers)
    assert {
        "Framework :: Jupyter",
        "Intended Audience :: Science/Research",
        "Operating System :: OS Independent",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    } <= set(classifiers)
    assert not [c for c in classifiers if c.startswith("License ::")]  # PEP 639: the expression replaces them
    assert not [r for r in meta.get_all("Requires-Dist") if r.startswith("anywidget")]
