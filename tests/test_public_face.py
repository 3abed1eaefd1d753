"""The package's small public face: the names a newcomer types first, loaded lazily."""

from __future__ import annotations

import subprocess
import sys

import pytest

import overlay_kit
from overlay_kit import gates, skill, store


def test_the_public_names_are_the_modules_own():
    assert overlay_kit.learn is gates.learn and overlay_kit.learn_many is gates.learn_many
    assert overlay_kit.Store is store.Store and overlay_kit.load_skill is skill.load_skill
    assert overlay_kit.__version__ and set(overlay_kit.__all__) <= set(dir(overlay_kit))


def test_importing_the_package_loads_none_of_them():
    code = "import sys, overlay_kit; print(any(m in sys.modules for m in ('overlay_kit.gates', 'overlay_kit.store')))"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        == "False"
    )


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        overlay_kit.no_such_name  # noqa: B018
