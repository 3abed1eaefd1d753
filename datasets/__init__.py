"""The project's own small data, shipped as the package resource `overlay_kit.datasets` (see
`overlay_kit.resources`), so a non-editable install finds it. No code lives here."""
