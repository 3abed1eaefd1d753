"""Old import paths of modules that moved into subpackages keep working for a release, with a
DeprecationWarning: `import overlay_kit.sim` gives `overlay_kit.studies.sim`.

Names only — this module imports nothing of the package, so the layering stays what the folders say. Nor does it
import `importlib.abc` (whose `importlib.resources` chain every CLI start would pay for): the import system needs
only the finder's `find_spec` and the loader's `create_module` / `exec_module`."""

from __future__ import annotations

import importlib
import sys
from importlib.machinery import ModuleSpec

MOVED = {
    "overlay_kit.engine": "overlay_kit.llm.engine",
    "overlay_kit.memory": "overlay_kit.surfaces.memory",
    "overlay_kit.knowledge": "overlay_kit.surfaces.knowledge",
    **{
        f"overlay_kit.{m}": f"overlay_kit.studies.{m}"
        for m in ("sim", "threshold", "lessons", "probe", "deploy", "kpis", "cost", "tuning", "surface_sim")
    },
}


class _Alias:
    """A meta-path finder and loader for the names in MOVED."""

    def find_spec(self, fullname, path=None, target=None):
        return ModuleSpec(fullname, self) if fullname in MOVED else None

    def create_module(self, spec):
        import warnings

        warnings.warn(
            f"{spec.name} moved to {MOVED[spec.name]}; the old path goes in the next release",
            DeprecationWarning,
            stacklevel=3,
        )
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module) -> None:
        pass  # the target module is already executed; the import system binds it under the old name


def install() -> None:
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.append(_Alias())
