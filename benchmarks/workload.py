"""The deterministic workload of issue 14, shared by `bench_hot.py` (ours) and `gaia_compare.py` (side by side).

Plain Python on purpose (no overlay_kit import): the GAIA worker, which runs in its own venv, builds the
same inputs from this file.

* two SKILL.md bodies: 9 sections / ~3.5 KB and 201 sections / ~83 KB (H1-H3 headings, lists, inline code,
  a fenced block holding `#` lines in every 5th section);
* per skill 100 lessons anchored on its sections (seeded), of which 90 are approved (active), 10 staged;
* corpora of 200 and 5,000 lesson rows to learn in one transaction.
"""

from __future__ import annotations

import random

WORDS = (
    "invoice vendor manager newsletter deadline meeting refund travel contract audit payroll outage "
    "rollback database replica failover customer escalation holiday budget security phishing review "
    "draft archive label schedule confirm notify"
).split()
VERBS = ("check", "confirm", "record", "escalate", "verify", "label", "archive", "notify", "draft", "review")


def _sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    return words[0].capitalize() + " " + " ".join(words[1:]) + "."


def skill_body(sections: int, seed: int = 14) -> str:
    """A body with `sections` headed sections (one H1, then H2/H3), ~410 bytes of text each."""
    rng = random.Random(seed + sections)
    out = [f"# Skill with {sections} sections\n\n{_sentence(rng, 14)}\n\n"]
    for i in range(1, sections):
        level = "##" if i % 3 else "###"
        out.append(f"{level} Step {i}: {rng.choice(VERBS)} the {rng.choice(WORDS)}\n\n")
        out.append(f"{_sentence(rng, 16)} {_sentence(rng, 12)}\n\n")
        out.append(
            f"- run `{rng.choice(VERBS)} --{rng.choice(WORDS)}` first\n"
            f"- then {_sentence(rng, 8).lower()}\n- keep `{rng.choice(WORDS)}_{i}` for the log\n\n"
        )
        if i % 5 == 0:
            out.append(
                f"```bash\n# {rng.choice(VERBS)} the {rng.choice(WORDS)}\n{rng.choice(VERBS)} "
                f"--{rng.choice(WORDS)}\n## not a heading\n```\n\n"
            )
    return "".join(out)


def skill_text(name: str, body: str) -> str:
    """The SKILL.md file: frontmatter + body."""
    return f"---\nname: {name}\ndescription: Benchmark skill {name} for the overlay hot-path workload.\n---\n\n{body}"


def lessons(slugs: list[str], n: int = 100, seed: int = 7, tag: str = "") -> list[dict]:
    """`n` lessons on the given section slugs: (section, trigger, body, created index). Deterministic. `tag`
    goes into every body ("Lesson <tag><i>: ..."): batches with different tags never repeat a lesson."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        trigger = " ".join(rng.sample(WORDS, 4))
        body = (
            f"Lesson {tag}{i}: when {trigger}, {rng.choice(VERBS)} the {rng.choice(WORDS)} "
            f"and {rng.choice(VERBS)} the {rng.choice(WORDS)} before replying."
        )
        out.append({"section": slugs[i % len(slugs)], "trigger": trigger, "body": body, "i": i})
    return out


ACTIVE = 90  # of every skill's 100 lessons; the last 10 stay staged
SIZES = {"small": 9, "large": 201}
CORPORA = (200, 5000)
# The learn corpora are drawn with seed LEARN_SEED + run: every timed run learns lessons it has not seen (a
# process keeps per-text state, e.g. the scan automaton's DFA, that the same batch again would find warm).
LEARN_SEED = 11
