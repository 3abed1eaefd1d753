"""overlay_kit — an immutable authored skill plus a typed, gated, revertible learned overlay."""

from . import _compat

_compat.install()


def load_ipython_extension(ipython) -> None:
    """`%load_ext overlay_kit`: the magics live in `overlay_kit.ipython`, imported only here (the core never
    imports IPython)."""
    from .ipython import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython) -> None:
    from .ipython import unload_ipython_extension as unload

    unload(ipython)
