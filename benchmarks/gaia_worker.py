"""The GAIA 0.25.1 side of `bench_gaia.py`; runs in the separate `.venv-gaia` (never in the project venv).

Reads one JSON request per line on stdin ({"op": name}), runs that operation once on GAIA's implementation of
the issue-14 workload (built from `workload.py`, so the inputs are the ones ours get), and answers one JSON line
{"wall_ms", "cpu_ms"} (learn ops: per row, in µs). The driver interleaves these with its own runs.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import workload  # noqa: E402
from gaia.agents.base.memory_store import MemoryStore  # noqa: E402
from gaia.agents.base.skill_deltas import STATUS_ACTIVE, SkillDelta, resolve_skill_body  # noqa: E402
from gaia.skills.sections import parse_sections  # noqa: E402

TMP = Path(tempfile.mkdtemp(prefix="gaia-bench-"))
BODIES = {size: workload.skill_body(n) for size, n in workload.SIZES.items()}


def rows_for(size: str, n: int = 100, seed: int = 7) -> list[dict]:
    """GAIA's nearest equivalent of "add this lesson under that section": a snippet substitution that keeps
    the section's heading line and puts the lesson under it (GAIA has no additive kind)."""
    sections = {s.slug: s for s in parse_sections(BODIES[size])}
    slugs = [s.slug for s in sections.values() if s.level]
    out = []
    for x in workload.lessons(slugs, n, seed):
        s = sections[x["section"]]
        head = s.text.split("\n", 1)[0]
        out.append({"section": s.slug, "digest": s.digest,
                    "payload": {"old": head, "new": f"{head}\n\n- {x['body']}"}})
    return out


def put(store: MemoryStore, size: str, rows: list[dict]) -> list[str]:
    return [store.put_delta(base_name=size, scope="user", kind="replace_snippet", anchor_section=r["section"],
                            anchor_digest=r["digest"], payload=r["payload"],
                            provenance={"source": "user_instruction"}) for r in rows]


def read_store() -> MemoryStore:
    store = MemoryStore(db_path=TMP / "read.db")
    for size in BODIES:
        ids = put(store, size, rows_for(size))
        for did in ids[:workload.ACTIVE]:
            store.approve_delta(did)
    return store


STORE = read_store()
ACTIVE = {size: [SkillDelta.from_row(r) for r in STORE.search_deltas(base_name=size, status=STATUS_ACTIVE,
                                                                       limit=None)] for size in BODIES}
assert all(len(v) == workload.ACTIVE for v in ACTIVE.values())
COUNTER = iter(range(1_000_000))


def skills_home() -> Path:
    """A GAIA config dir holding the small skill, and its memory database, for `gaia skill deltas`."""
    home = TMP / "home"
    d = home / "skills" / "small"
    d.mkdir(parents=True, exist_ok=True)
    (d / "SKILL.md").write_text(workload.skill_text("small", BODIES["small"]), encoding="utf-8")
    return home


def op(name: str, seed: int = workload.LEARN_SEED) -> dict:
    c, t = time.process_time(), time.perf_counter()
    per = 1
    if name.startswith("anchors_"):
        [s.digest for s in parse_sections(BODIES[name.split("_")[1]])]
    elif name == "compose_small":
        out = resolve_skill_body(BODIES["small"], ACTIVE["small"])
        assert len(out.applied) == workload.ACTIVE
    elif name == "search_small":
        got = [SkillDelta.from_row(r) for r in STORE.search_deltas(base_name="small", status=STATUS_ACTIVE,
                                                                   limit=None)]
        assert len(got) == workload.ACTIVE
    elif name.startswith("learn_"):
        n = int(name.split("_")[1])
        rows = rows_for("large", n, seed)
        store = MemoryStore(db_path=TMP / f"learn-{next(COUNTER)}.db")
        c, t = time.process_time(), time.perf_counter()  # the open (schema creation) is not the write path
        put(store, "large", rows)
        per = n
    elif name == "cli":
        import subprocess

        home = skills_home()
        env = dict(os.environ, GAIA_CONFIG_DIR=str(home), HOME=str(home))
        c0 = os.times()
        subprocess.run([str(Path(sys.executable).with_name("gaia")), "skill", "deltas", "small", "--db",
                        str(TMP / "read.db")], env=env, check=True, capture_output=True)
        c1 = os.times()
        return {"wall_ms": (time.perf_counter() - t) * 1e3,
                "cpu_ms": (c1.children_user + c1.children_system - c0.children_user - c0.children_system) * 1e3}
    else:
        raise ValueError(f"unknown op {name!r}")
    scale = 1e6 / per if per > 1 else 1e3
    return {"wall_ms": (time.perf_counter() - t) * scale, "cpu_ms": (time.process_time() - c) * scale}


def main() -> None:
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            print(json.dumps(op(request["op"], request.get("seed", workload.LEARN_SEED))), flush=True)
        except Exception as exc:  # reported to the driver, which stops
            print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)


if __name__ == "__main__":
    main()
