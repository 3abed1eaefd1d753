"""The model client: an OpenAI-compatible client for a local Lemonade server (`client`) with record/replay
cassettes, and a real local llama.cpp engine for tests and cost measurements (`engine`).

Sits above the pipeline: nothing in the core imports it."""

from .client import *  # noqa: F401,F403 — the client's public names, as `overlay_kit.llm` always had them
from .client import __all__ as _client_all

__all__ = list(_client_all)
