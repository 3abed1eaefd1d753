"""Where the project's data lives: `datasets/` ships inside the package as the resource `overlay_kit.datasets`
(pyproject maps it), so an editable checkout and a plain `pip install .` find the same files."""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files
from pathlib import Path

__all__ = ["dataset_path", "datasets_root"]


@lru_cache(maxsize=1)
def datasets_root() -> Path:
    """The `datasets/` folder (a real directory in a checkout and in an installed wheel)."""
    return Path(str(files("overlay_kit.datasets")))


def dataset_path(*parts: str) -> Path:
    """A file or folder under `datasets/`: `dataset_path("tau", "pairs.csv")`."""
    return datasets_root().joinpath(*parts)
