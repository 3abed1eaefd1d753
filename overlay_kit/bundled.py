"""Offline model assets that ship inside installed packages (no download, ever).

The `wordllama` wheel carries a 256-d static token-embedding matrix and the Llama-2 32k tokenizer it
was trained with. Its own `load()` looks in the wrong folder and tries to download, so we read the
files directly.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path

from tokenizers import Tokenizer

__all__ = ["EMBEDDER_ID", "embedding_path", "llama_tokenizer", "tokenizer_path"]

EMBEDDER_ID = "wordllama/l2_supercat_256"


def _wordllama(*parts: str) -> Path:
    # find_spec locates the package without importing it: importing wordllama configures root logging.
    spec = find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the `wordllama` package is not installed: reinstall overlay_kit's dependencies")
    path = Path(next(iter(spec.submodule_search_locations)), *parts)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: reinstall the pinned `wordllama` wheel")
    return path


def tokenizer_path() -> Path:
    """The Llama-2 32k tokenizer (Hugging Face `tokenizers` JSON)."""
    return _wordllama("tokenizers", "l2_supercat_tokenizer_config.json")


def embedding_path() -> Path:
    """The 32000 × 256 float16 static embedding matrix (`embedding.weight`)."""
    return _wordllama("weights", "l2_supercat_256.safetensors")


@lru_cache(maxsize=1)
def llama_tokenizer() -> Tokenizer:
    return Tokenizer.from_file(str(tokenizer_path()))
