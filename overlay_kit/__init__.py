"""overlay_kit — an immutable authored skill plus a typed, gated, revertible learned overlay."""
