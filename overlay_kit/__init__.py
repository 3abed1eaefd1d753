"""overlay_kit — an immutable authored skill plus a typed, gated, revertible learned overlay.

The short path (each name loads its module on first use: `import overlay_kit` stays cheap):

    import overlay_kit
    skill = overlay_kit.load_skill("datasets/skills/triage-inbox")
    with overlay_kit.Store.open("overlay.db") as store:
        overlay_kit.learn(store, skill, "preference", {"body": "Keep replies short."}, section="drafting-replies",
                          provenance="user_instruction")
    # then overlay_kit.resolve.resolve(skill, store): the module `resolve` keeps its name
"""

from importlib import import_module

from . import _compat

_compat.install()

__all__ = ["Store", "__version__", "learn", "learn_many", "load_skill"]
_PUBLIC = {"learn": "gates", "learn_many": "gates", "Store": "store", "load_skill": "skill"}


def __getattr__(name: str):
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("overlay_kit")
        except PackageNotFoundError:  # not installed (a bare checkout on sys.path): no version to state
            raise AttributeError("overlay_kit.__version__: the package is not installed") from None
    if name in _PUBLIC:
        return getattr(import_module(f".{_PUBLIC[name]}", __name__), name)
    raise AttributeError(f"module 'overlay_kit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def load_ipython_extension(ipython) -> None:
    """`%load_ext overlay_kit`: the magics live in `overlay_kit.ipython`, imported only here (the core never
    imports IPython)."""
    from .ipython import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython) -> None:
    from .ipython import unload_ipython_extension as unload

    unload(ipython)
