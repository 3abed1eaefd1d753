"""Shared notebook set-up: one call at the top of every study notebook.

    from overlay_widgets.notebook import setup
    setup()                      # quiet logging, offline altair charts, readable pandas tables

A chart is displayed as one bundle of three forms (`chart_bundle`), and each viewer shows the richest it can:
interactive Vega-Lite (tooltips on every mark; JupyterLab, VS Code and Colab draw it offline), a PNG drawn
offline by vl-convert (an untrusted notebook, a repository preview, nbval), and a line of text. The spec's numbers
are rounded to 6 significant digits so that the stored spec, which nbval compares, is the same on every CPU.

Everything here is presentation; the studies themselves live in `overlay_kit.studies`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import math
import struct

__all__ = ["VEGALITE_MIME", "chart_bundle", "setup"]

VEGALITE_MIME = "application/vnd.vegalite.v5+json"
PNG_SCALE = 2  # drawn at twice its size and shown at its size: sharp on high-density screens


def _rounded(value):
    """6 significant digits (a non-finite number, which JSON cannot hold, as null)."""
    if isinstance(value, float):
        return float(f"{value:.6g}") if math.isfinite(value) else None
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def stable_spec(spec: dict) -> dict:
    """The spec with its data rounded and each dataset renamed after its rounded values (altair names a dataset
    by a hash of its unrounded values, which may differ in the last bit between CPUs); every mark shows a
    tooltip of its encoded fields unless the chart says otherwise."""
    spec = _rounded(spec)
    text = json.dumps(spec, sort_keys=True)
    datasets = spec.get("datasets", {})
    for old, values in datasets.items():
        new = "data-" + hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()[:32]
        text = text.replace(json.dumps(old), json.dumps(new))
    out = json.loads(text)
    mark = out.setdefault("config", {}).setdefault("mark", {})
    mark.setdefault("tooltip", True)
    return out


def _title(spec: dict) -> str:
    title = spec.get("title", "")
    title = title.get("text", "") if isinstance(title, dict) else title
    return " ".join(title) if isinstance(title, list) else str(title)


def chart_bundle(spec: dict, **_metadata) -> tuple[dict, dict]:
    """An altair renderer: (bundle, metadata) of interactive Vega-Lite, a PNG beside it, and a text line."""
    import vl_convert

    spec = stable_spec(spec)
    png = vl_convert.vegalite_to_png(spec, scale=PNG_SCALE)
    width, height = struct.unpack(">II", png[16:24])  # the IHDR chunk
    title = _title(spec)
    bundle = {
        VEGALITE_MIME: spec,
        "image/png": base64.b64encode(png).decode("ascii"),
        "text/plain": f"<chart{': ' + title if title else ''} — interactive Vega-Lite, with a PNG for viewers "
        "without Vega>",
    }
    return bundle, {"image/png": {"width": width // PNG_SCALE, "height": height // PNG_SCALE}}


def setup(*, max_colwidth: int = 100, max_rows: int = 200, width: int = 200) -> None:
    """Configure logging, altair and pandas the same way in every notebook (idempotent)."""
    logging.basicConfig(level=logging.WARNING)  # before any import that would configure INFO logging
    import altair as alt
    import pandas as pd

    alt.renderers.register("overlay", chart_bundle)
    alt.renderers.enable("overlay")
    pd.set_option("display.max_colwidth", max_colwidth)
    pd.set_option("display.max_rows", max_rows)
    pd.set_option("display.max_columns", 30)
    pd.set_option("display.width", width)
