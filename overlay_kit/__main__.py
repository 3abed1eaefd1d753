"""`python -m overlay_kit …`: the `overlay-kit` command."""

from overlay_kit.cli import main

raise SystemExit(main())
