"""Every fenced shell block in README.md and docs/*.md runs verbatim, in order, from a fresh copy of the
repository's files, with a temporary HOME and an isolated OVERLAY_KIT_DB — so the documentation cannot rot.
The copy is a git work tree with the repository's .gitignore: the commands may leave files only where git
ignores them (their outputs go under build/), never a new untracked file.

A block that cannot run here (it opens a browser, builds the environment, runs the suite itself) starts with a
`# manual: <reason>` line; each one is reported as a SKIPPED test item carrying that reason, never dropped
silently. The README's Python snippet is run the same way.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELL = {"bash", "sh", "shell", "console"}
FENCE = re.compile(
    r"^(?P<fence>```+|~~~+)[ \t]*(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.MULTILINE | re.DOTALL
)
MANUAL = re.compile(r"\A#\s*manual:\s*(?P<reason>\S.*)$", re.MULTILINE)
# Output a documented command must never print: a crash, or "nothing to show" about a skill that is not there.
BAD_OUTPUT = re.compile(
    r"Traceback \(most recent call last\)|no skill file and no discovered skill|"
    r"No such file or directory"
)


def blocks(path: Path, langs: set[str]) -> list[str]:
    """The fenced code blocks of one Markdown file whose info string names one of `langs`, in order."""
    text = path.read_text(encoding="utf-8")
    return [m["body"] for m in FENCE.finditer(text) if (m["info"].split() or [""])[0].lower() in langs]


def manual_reason(block: str) -> str | None:
    m = MANUAL.match(block)
    return m["reason"].strip() if m else None


def fresh_clone(tmp: Path) -> tuple[Path, dict]:
    """A copy of the files git would check out (tracked + untracked-not-ignored) made a git work tree of its own
    (nothing staged: every file untracked), a temp HOME and database."""
    files = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    clone = tmp / "clone"
    for rel in filter(None, files):
        src = REPO / rel
        if src.is_file() or src.is_symlink():
            (clone / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, clone / rel, follow_symlinks=False)
    subprocess.run(["git", "init", "-q"], cwd=clone, capture_output=True, check=True)
    home = tmp / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERLAY_KIT_", "LEMONADE_"))}
    env.update(
        HOME=str(home),
        OVERLAY_KIT_DB=str(tmp / "db" / "overlay.db"),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
    )
    return clone, env


def untracked(clone: Path) -> set[str]:
    """`git status --porcelain --untracked-files=all` of the clone, as a set of lines."""
    return set(
        subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=clone,
            text=True,
            capture_output=True,
            check=True,
        ).stdout.splitlines()
    )


def run_script(script: str, clone: Path, env: dict, timeout: int = 600) -> str:
    before = untracked(clone)
    proc = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=clone,
        env=env,
        text=True,
        capture_output=True,
        timeout=timeout,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"exit {proc.returncode}\n{out[-6000:]}"
    assert not BAD_OUTPUT.search(out), out[-6000:]
    new = untracked(clone) - before
    assert not new, f"new files outside build/ (write them under build/, which git ignores): {sorted(new)}"
    return out


MANUAL_BLOCKS = [(p, b) for p in DOCS for b in blocks(p, SHELL) if manual_reason(b) is not None]


RUNNABLE = [p for p in DOCS if any(manual_reason(b) is None for b in blocks(p, SHELL))]


def test_the_docs_have_runnable_shell_blocks():
    assert REPO / "docs" / "reference.md" in RUNNABLE


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: str(p.relative_to(REPO)))
def test_every_shell_block_runs_verbatim_in_order(path, tmp_path):
    runnable = [b for b in blocks(path, SHELL) if manual_reason(b) is None]
    clone, env = fresh_clone(tmp_path)
    script = "\n".join(f"echo '>>> block {i + 1}'\n{b}" for i, b in enumerate(runnable))
    out = run_script(script, clone, env)
    assert out.count(">>> block") == len(runnable)


@pytest.mark.parametrize(
    "path,block", MANUAL_BLOCKS, ids=[f"{p.name}:{b.splitlines()[1].split('#')[0].strip()}" for p, b in MANUAL_BLOCKS]
)
def test_manual_block_is_marked_with_a_reason(path, block):
    """Reported, not run: the marker names why, and only commands that need a person or rebuild the world."""
    reason = manual_reason(block)
    assert len(reason) > 10
    commands = [ln.split("#")[0].strip() for ln in block.splitlines()[1:] if ln.split("#")[0].strip()]
    assert all(c.startswith(("make ", ". .venv/bin/activate")) for c in commands), commands
    pytest.skip(f"manual block in {path.name}: {reason}")


def test_readme_python_snippet_runs_end_to_end(tmp_path):
    (snippet,) = blocks(REPO / "README.md", {"python"})
    assert len(snippet.strip().splitlines()) <= 12
    clone, env = fresh_clone(tmp_path)
    out = run_script(f"python - <<'EOF'\n{snippet}EOF", clone, env, timeout=300)
    (delta_id,) = re.findall(r"^staged (delta_[0-9a-f]{16})$", out, re.MULTILINE)
    assert "+- Keep replies to two sentences." in out and "(effective)" in out
    # run twice more: the same lesson is a no-op, never a second (or third) copy in the effective skill
    again = run_script(f"python - <<'EOF'\n{snippet}{snippet}EOF", clone, env, timeout=300)
    assert re.findall(r"^noop (delta_[0-9a-f]{16})$", again, re.MULTILINE) == [delta_id, delta_id], again
    assert again.count("+- Keep replies to two sentences.") == 2  # one line in each run's diff


def test_the_docs_link_only_files_inside_the_repo():
    for path in DOCS:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue
            resolved = (path.parent / target).resolve()
            assert resolved.is_relative_to(REPO), f"{path.name} links outside the repo: {target}"
            assert resolved.exists(), f"{path.name}: broken link {target}"
        assert "../shared" not in path.read_text(encoding="utf-8"), path


def test_the_readme_fits_two_screens_and_opens_with_the_five_minute_path():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 100, len(lines)
    first_screen = "\n".join(lines[:50])
    assert "make lab" in first_screen and "```python" in first_screen and "00_quickstart" in first_screen
