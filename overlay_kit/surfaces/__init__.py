"""Capability surfaces (seed 004): a runtime signal is routed to user memory, knowledge, a skill's overlay, a
prompt or the program (`routing`); user memory and knowledge each own a background worker (`memory`,
`knowledge`).

Sits above the pipeline: nothing in the core imports it."""

from .routing import *  # noqa: F401,F403 — routing's public names, as `overlay_kit.surfaces` always had them
from .routing import __all__ as _routing_all

__all__ = list(_routing_all)
