"""ipywidgets front-ends over overlay_kit\x27s public API."""
