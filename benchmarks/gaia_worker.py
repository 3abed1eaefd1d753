"""The GAIA 0.25.1 side of `gaia_compare.py`; runs in GAIA's own venv (never in the project venv).

Reads one JSON request per line on stdin, runs it on GAIA's implementation of the workload (built from
`workload.py`, so the inputs are the ones ours and the floor get) and answers one JSON line: {"s": [seconds of
each timed call]} (per row for a batch), or {"error": ...}. `setup` comes first. As a script with `--cold DB`, it
times the first search + compose of the small skill in this fresh process and prints {"s": seconds}.

GAIA runs as its users would benchmark it: its log off (`gaia --logging-level WARNING` does the same for the
CLI: `log_manager.set_level("gaia", WARNING)`; the `gaia` logger itself is set too, since the store's module
logger is a plain `logging.getLogger`), into a log file under the run's own folder (`GAIA_LOG_FILE`), never the
user's `~/.gaia/gaia.log`. `log` turns its INFO log on or off again (the harness times one row with it on, to
say what it costs).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))

import workload  # noqa: E402
from gaia.agents.base.memory_store import MemoryStore  # noqa: E402
from gaia.agents.base.skill_deltas import STATUS_ACTIVE, SkillDelta, resolve_skill_body  # noqa: E402
from gaia.agents.base.tools import _TOOL_REGISTRY  # noqa: E402
from gaia.agents.tools.skill_learning_tools import SkillLearningToolsMixin  # noqa: E402
from gaia.logger import log_manager  # noqa: E402
from gaia.skills.sections import parse_sections  # noqa: E402

BODIES = {size: workload.skill_body(n) for size, n in workload.SIZES.items()}


def logs(on: bool) -> None:
    """GAIA's INFO log on (as installed: one line per put_delta, to gaia.log and stderr) or off (WARNING)."""
    level = logging.INFO if on else logging.WARNING
    log_manager.set_level("gaia", level)
    logging.getLogger("gaia").setLevel(level)


def rows_for(size: str, n: int, seed: int, tag: str = "") -> list[dict]:
    """GAIA's nearest equivalent of "add this lesson under that section", one snippet per lesson (GAIA has no
    additive kind): a `replace_snippet` that quotes a text of the section and puts the lesson after it. The
    first lesson of a section quotes its heading line; each later one quotes the line the lesson before it
    added, so no two lessons share a snippet (GAIA's `supersession_key` would call two with the same snippet
    one lesson learned twice) and each substitution matches once."""
    sections = {s.slug: s for s in parse_sections(BODIES[size])}
    last: dict[str, str] = {}
    out = []
    for x in workload.lessons([s.slug for s in sections.values() if s.level], n, seed, tag):
        s = sections[x["section"]]
        old = last.get(s.slug) or s.text.split("\n", 1)[0]
        line = f"- {x['body']}"
        last[s.slug] = line
        out.append(
            {"section": s.slug, "digest": s.digest, "payload": {"old": old, "new": f"{old}\n{line}"}, "body": x["body"]}
        )
    return out


def put(store: MemoryStore, size: str, row: dict) -> str:
    return store.put_delta(
        base_name=size,
        scope="user",
        kind="replace_snippet",
        anchor_section=row["section"],
        anchor_digest=row["digest"],
        payload=row["payload"],
        provenance={"source": "user_instruction"},
    )


def sync(store: MemoryStore, level: str) -> None:
    store._conn.execute(f"PRAGMA synchronous = {level}")  # GAIA has no setting for it: its connection, as opened


def active(store: MemoryStore, size: str) -> list[SkillDelta]:
    return [SkillDelta.from_row(r) for r in store.search_deltas(base_name=size, status=STATUS_ACTIVE, limit=None)]


class Gaia:
    def setup(self, dir: str, fill: int, big: int) -> dict:
        """The stores: read.db (per skill 100 lessons, 90 active), learn.db (`fill` rows of the large skill) and
        big.db (`big` active lessons on the small skill); and a GAIA home holding the small skill for the CLI."""
        root = Path(dir)
        self.root = root
        logs(False)
        self.read = MemoryStore(db_path=root / "read.db")
        default = self.read._conn.execute("PRAGMA synchronous").fetchone()[0]
        sync(self.read, "NORMAL")  # building is not timed
        for size in BODIES:
            ids = [put(self.read, size, r) for r in rows_for(size, 100, 7)]
            for did in ids[: workload.ACTIVE]:
                self.read.approve_delta(did)
        self.active = {size: active(self.read, size) for size in BODIES}
        assert all(len(v) == workload.ACTIVE for v in self.active.values())
        self.learn = MemoryStore(db_path=root / "learn.db")
        sync(self.learn, "NORMAL")
        for r in rows_for("large", fill, 5, "fill"):
            put(self.learn, "large", r)
        big_store = MemoryStore(db_path=root / "big.db")
        sync(big_store, "NORMAL")
        for did in [put(big_store, "small", r) for r in rows_for("small", big, 8, "big")]:
            big_store.approve_delta(did)
        self.big = active(big_store, "small")
        assert len(self.big) == big, len(self.big)
        big_store.close()
        home = root / "home"
        (home / "skills" / "small").mkdir(parents=True, exist_ok=True)
        (home / "skills" / "small" / "SKILL.md").write_text(
            workload.skill_text("small", BODIES["small"]), encoding="utf-8"
        )
        self.batches = 0
        self.agent = Agent(self.learn, "large")
        self.remember = _TOOL_REGISTRY["remember_skill_lesson"]["function"]
        return {
            "version": version("amd-gaia"),
            "synchronous": default,
            "read_db": str(root / "read.db"),
            "home": str(home),
            "slugs": {size: [s.slug for s in parse_sections(b) if s.level] for size, b in BODIES.items()},
        }

    def learn1(self, level: str, reps: int, seed: int, tag: str) -> list[float]:
        """`reps` put_delta calls, one lesson each, into the store of `fill` rows, at `synchronous=level`."""
        sync(self.learn, level)
        out = []
        for r in rows_for("large", reps, seed, tag):
            t = time.perf_counter()
            put(self.learn, "large", r)
            out.append(time.perf_counter() - t)
        return out

    def learn_validated(self, level: str, reps: int, seed: int, tag: str) -> list[float]:
        """`reps` lessons through GAIA's validated write, `remember_skill_lesson` (the model-facing tool: the
        provenance rule, payload cap, anchor and snippet checks, the heading check, the 120-token overlay
        ceiling, supersession of staged and active siblings, put_delta, then approve_delta: the lesson is
        active), into the store of `fill` staged rows, at `synchronous=level`. Untimed after each: the new row
        is archived (`gaia skill deltas --revert`), so every call meets the same store (no active lesson: the
        overlay ceiling admits only about four of these lessons at once). The lesson quotes the section's first
        line of text and goes after it (a snippet none of the stored rows quotes, so nothing is superseded)."""
        sync(self.learn, level)
        first = {
            s.slug: next(ln for ln in s.text.split("\n")[1:] if ln.strip())
            for s in parse_sections(BODIES["large"])
            if s.level
        }
        out = []
        for r in rows_for("large", reps, seed, tag):
            quote = first[r["section"]]
            t = time.perf_counter()
            got = self.remember(
                skill="large",
                section=r["section"],
                replaces=quote,
                corrected_text=f"{quote}\n- {r['body']}",
                reason="the user said so",
            )
            out.append(time.perf_counter() - t)
            assert got.get("status") == "success", got.get("message")
            assert self.learn.archive_delta(got["delta_id"], base_name="large", scope=self.agent.scope)
        return out

    def log(self, on: bool) -> dict:
        logs(on)
        return {"on": on}

    def learn_batch(self, n: int, seed: int, tag: str, level: str) -> list[float]:
        """`n` lessons into a new, empty store, put_delta each (GAIA has no batch write), at `level`."""
        rows = rows_for("large", n, seed, tag)
        self.batches += 1
        store = MemoryStore(db_path=self.root / f"batch-{self.batches}.db")
        sync(store, level)
        t = time.perf_counter()
        for r in rows:
            put(store, "large", r)
        took = time.perf_counter() - t
        store.close()
        return [took / n]

    def compose(self, which: str, reps: int) -> list[float]:
        deltas, body = (self.active["small"], BODIES["small"]) if which == "90" else (self.big, BODIES["small"])
        out = []
        for _ in range(reps):
            t = time.perf_counter()
            got = resolve_skill_body(body, deltas)
            out.append(time.perf_counter() - t)
        assert len(got.applied) == len(deltas), (len(got.applied), len(deltas))
        return out

    def search(self, reps: int) -> list[float]:
        out = []
        for _ in range(reps):
            t = time.perf_counter()
            got = active(self.read, "small")
            out.append(time.perf_counter() - t)
        assert len(got) == workload.ACTIVE
        return out

    def anchors(self, size: str, reps: int) -> list[float]:
        out = []
        for _ in range(reps):
            t = time.perf_counter()
            [s.digest for s in parse_sections(BODIES[size])]
            out.append(time.perf_counter() - t)
        return out


class Agent(SkillLearningToolsMixin):
    """What `remember_skill_lesson` reads of the agent that registers it: the loaded skill, the memory store,
    the scope, the turn's provenance (the user's own words), no console."""

    def __init__(self, store: MemoryStore, size: str):
        self.loaded_skills = {size: SimpleNamespace(body=BODIES[size], root=None, version=None)}
        self._memory_store = store
        self.scope = "user"
        self.console = None
        self.register_skill_learning_tools()

    def learned_skill_scope(self) -> str:
        return self.scope

    def turn_content_provenance(self) -> str:
        return "user_instruction"


def cold(db: str) -> None:
    store = MemoryStore(db_path=Path(db))
    t = time.perf_counter()
    got = resolve_skill_body(BODIES["small"], active(store, "small"))
    took = time.perf_counter() - t
    assert len(got.applied) == workload.ACTIVE
    print(json.dumps({"s": took}))


def main() -> None:
    logs(False)
    if sys.argv[1:2] == ["--cold"]:
        return cold(sys.argv[2])
    gaia = Gaia()
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer = getattr(gaia, request.pop("op"))(**request)
            print(json.dumps(answer if isinstance(answer, dict) else {"s": answer}), flush=True)
        except Exception as exc:  # reported to the driver, which stops
            print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)


if __name__ == "__main__":
    main()
