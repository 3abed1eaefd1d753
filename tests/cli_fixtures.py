"""Running the `overlay-kit` command in-process, as the CLI tests do."""

from __future__ import annotations

from overlay_kit.cli import main


def run(capsys, *argv) -> tuple[int, str, str]:
    """`overlay-kit ARGV` (each argument as a string): its exit status, stdout and stderr."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err
