"""Shared notebook set-up: one call at the top of every study notebook.

    from overlay_widgets.notebook import setup
    setup()                      # quiet logging, offline altair (svg), readable pandas tables

Everything here is presentation; the studies themselves live in `overlay_kit.studies`.
"""

from __future__ import annotations

import logging


def setup(*, max_colwidth: int = 100, max_rows: int = 200, width: int = 200) -> None:
    """Configure logging, altair and pandas the same way in every notebook (idempotent)."""
    logging.basicConfig(level=logging.WARNING)  # before any import that would configure INFO logging
    import altair as alt
    import pandas as pd

    alt.renderers.enable("svg")  # offline: no CDN, and nbval compares the svg text
    pd.set_option("display.max_colwidth", max_colwidth)
    pd.set_option("display.max_rows", max_rows)
    pd.set_option("display.max_columns", 30)
    pd.set_option("display.width", width)
