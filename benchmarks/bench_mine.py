"""Time `overlay-kit mine` on a synthetic 1,000-commit repository (issue 39's goal: under a minute); print it.

    .venv/bin/python benchmarks/bench_mine.py [--commits N] [--files N] [--seed S] [--bare] [--keep DIR]

The repository is written with `git fast-import` (seeded): `--files` instruction files (a CLAUDE.md, an
AGENTS.md, SKILL.md files with frontmatter) of a few sections of bullets, and source files beside them.
Each commit edits one or two files: a bullet appended, inserted, reworded, deleted or moved, a section added,
a heading renamed, the frontmatter touched, or only a source file changed; every 150th commit renames a skill
directory (`R` in fast-import: a rename git's `-M` must follow). The time covers the whole `mine(...)` call:
the `git log` pass, the blob reads, anchoring, the section policy and the rule-fate tracking.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import tempfile
import time
from pathlib import Path

from overlay_kit.mine import mine

WORDS = (
    "always never prefer avoid run test commit deploy format lint review document cache retry log check "
    "the a every each new old small large public private function module file branch release build"
).split()


def _sentence(rng: random.Random, n: int | None = None) -> str:
    words = [rng.choice(WORDS) for _ in range(n or rng.randint(4, 12))]
    return " ".join(words).capitalize() + "."


class Doc:
    def __init__(self, rng: random.Random, skill: str | None):
        self.rng, self.skill, self.desc = rng, skill, _sentence(rng)
        self.sections = [
            [_sentence(rng, 2).rstrip("."), [_sentence(rng) for _ in range(rng.randint(1, 5))]]
            for _ in range(rng.randint(2, 6))
        ]

    def text(self) -> str:
        head = f"---\nname: {self.skill}\ndescription: {self.desc}\n---\n" if self.skill else ""
        body = "# Title\n\nWhat this file is for.\n"
        for heading, bullets in self.sections:
            body += f"\n## {heading}\n\n" + "".join(f"- {b}\n" for b in bullets)
        return head + body

    def edit(self) -> None:
        rng = self.rng
        sec = rng.choice(self.sections)
        op = rng.choices(
            ("append", "insert", "reword", "delete", "move", "section", "heading", "meta"), (40, 10, 15, 10, 5, 8, 4, 8)
        )[0]
        if op == "append" or not sec[1]:
            sec[1].append(_sentence(rng))
        elif op == "insert":
            sec[1].insert(rng.randrange(len(sec[1]) + 1), _sentence(rng))
        elif op == "reword":
            k = rng.randrange(len(sec[1]))
            words = sec[1][k].rstrip(".").split()
            words[rng.randrange(len(words))] = rng.choice(WORDS)
            sec[1][k] = " ".join(words) + "."
        elif op == "delete":
            sec[1].pop(rng.randrange(len(sec[1])))
        elif op == "move":
            rng.choice(self.sections)[1].append(sec[1].pop(rng.randrange(len(sec[1]))))
        elif op == "section":
            self.sections.insert(
                rng.randrange(len(self.sections) + 1),
                [_sentence(rng, 2).rstrip("."), [_sentence(rng) for _ in range(2)]],
            )
        elif op == "heading":
            sec[0] = _sentence(rng, 2).rstrip(".")
        else:
            self.desc = _sentence(rng)


def build(path: Path, commits: int, files: int, seed: int) -> None:
    rng = random.Random(seed)
    names = ["CLAUDE.md", "AGENTS.md"] + [f"skills/s{k}/SKILL.md" for k in range(max(0, files - 2))]
    docs = {n: Doc(rng, n.split("/")[1] if n.startswith("skills/") else None) for n in names[:files]}
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    out: list[bytes] = []

    def blob(path_: str, text: str) -> None:
        data = text.encode()
        out.append(f"M 100644 inline {path_}\ndata {len(data)}\n".encode() + data + b"\n")

    for c in range(commits):
        msg = f"commit {c}".encode()
        out.append(b"commit refs/heads/main\n")
        out.append(f"committer t <t@example.org> {1700000000 + 60 * c} +0000\n".encode())
        out.append(f"data {len(msg)}\n".encode() + msg + b"\n")
        if c == 0:
            for n, d in docs.items():
                blob(n, d.text())
            blob("src/main.py", "print('hello')\n")
            continue
        if c % 150 == 0 and len(docs) > 2:  # rename a skill's directory
            old = rng.choice([n for n in docs if n.startswith("skills/")])
            new = old.replace("/SKILL.md", f"-r{c}/SKILL.md")
            docs[new] = docs.pop(old)
            out.append(f"R {old} {new}\n".encode())
            continue
        if rng.random() < 0.2:
            blob("src/main.py", f"print({c})\n")
            continue
        for n in rng.sample(sorted(docs), k=min(len(docs), rng.choice((1, 1, 2)))):
            docs[n].edit()
            blob(n, docs[n].text())
    out.append(b"done\n")
    subprocess.run(["git", "-C", str(path), "fast-import", "--quiet", "--done"], input=b"".join(out), check=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, default=1000)
    ap.add_argument("--files", type=int, default=12)
    ap.add_argument("--seed", type=int, default=39)
    ap.add_argument("--bare", action="store_true", help="mine a bare clone (as the corpus mirrors are)")
    ap.add_argument("--keep", type=Path, help="build the repository here and keep it")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = args.keep or Path(tmp) / "synthetic"
        t0 = time.perf_counter()
        build(repo, args.commits, args.files, args.seed)
        if args.bare:
            bare = Path(tmp) / "synthetic.git"
            subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
            repo = bare
        built = time.perf_counter() - t0
        t0 = time.perf_counter()
        result = mine([repo])
        took = time.perf_counter() - t0
    versions = sum(len(f.versions) for f in result.files)
    print(f"built {args.commits} commits in {built:.1f} s")
    print(
        f"mine: {args.commits} commits, {len(result.files)} files, {versions} versions, {len(result.pairs)} pairs, "
        f"{len(result.events)} rule events in {took:.2f} s"
    )


if __name__ == "__main__":
    main()
