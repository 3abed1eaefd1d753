"""The floors of `gaia_compare.py`: for each timed path, a minimal correct implementation of the same contract on
the same input, standard library only (it also runs as a whole process: `python floors.py resolve ...`).

What each floor does — and leaves out — is what makes "ours ÷ floor" readable:

* learn (`learn_one`, `learn_many`): the rows our learn writes — the delta row with every column our schema has
  (its at-rest MAC in `seal`, its lesson digest in `lesson_key`) and its audit row — into tables created from our
  store's own DDL (`copy_ddl` reads `sqlite_master` of a fresh `Store` file, so the floor cannot drift), in one
  transaction: INSERT + COMMIT for one lesson, `executemany` + COMMIT for a batch. No gate rules, no dedup.
* search: one indexed SELECT of a skill's active rows, each row's MAC checked with the same keyed hash as ours
  (keyed BLAKE2b-256), `json.loads` of its JSON columns, one plain object per row — with the caches ours has:
  a seal already checked against exactly these values is not hashed again (ours: `RowSealer._verified`), and
  each JSON text is decoded once per process (ours: `store._CANONICAL` for payloads, each reader getting its
  own copy; the anchor and provenance by `lru_cache`).
* resolve at scale (`budgeted`): the skill's active rows read in the budget's order (the ORDER BY of our
  `Store.budget_order`) with each lesson's kept line count (ours keeps them in `overlay_meta`; the floor in a
  table of its own, `floor_line_tokens`, filled by the harness with the same tokenizer), stopping at the first
  lesson that does not fit the room the authored body leaves under the ceiling; only those rows are read
  whole (MAC checked, decoded: `search`), then composed.
* compose: the authored sections in order, each followed by its deltas' lines ("- body"), sorted by (tier, kind,
  created_at, id), joined — no budget, no notes, no structure check.
* anchors: a fence-aware ATX line split with unique slugs and a sha256 digest of each section's
  whitespace-normalized text (no setext headings, no container blocks: less than the CommonMark contract).
* the CLI: a process that reads SKILL.md, searches, composes and prints (`python -m floors resolve SKILL DB KEY`,
  run as a module so that it loads from bytecode like ours: the harness gives both the same warm
  `PYTHONPYCACHEPREFIX`).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import sqlite3
import sys
import time
from datetime import datetime, timezone
from itertools import accumulate
from pathlib import Path
from types import SimpleNamespace

_DUMPS = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode
_DOMAIN = b"floor row seal\x00"
_KNOWN = {
    "id",
    "base_name",
    "scope",
    "kind",
    "tier",
    "anchor",
    "payload",
    "provenance",
    "status",
    "success_count",
    "attempt_count",
    "created_at",
    "approved_at",
    "findings",
    "resident",
    "approved_by",
    "seal",
    "lesson_key",
}


# ----------------------------------------------------------------------------- the store


def copy_ddl(db: str | Path, tables: tuple[str, ...] = ("skill_deltas", "delta_audit")) -> list[str]:
    """The CREATE statements (tables, then their indexes and triggers) of `tables` as `db` holds them."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        marks = ",".join("?" * len(tables))
        rows = conn.execute(
            f"SELECT type, sql FROM sqlite_master WHERE tbl_name IN ({marks}) AND sql IS NOT NULL "
            "ORDER BY type != 'table', rowid",
            tables,
        ).fetchall()
    finally:
        conn.close()
    if sum(t == "table" for t, _ in rows) != len(tables):
        raise ValueError(f"{db}: does not hold all of {tables}")
    return [sql for _, sql in rows]


class Floor:
    """A floor store: our tables' DDL, WAL, `synchronous` as asked, a 32-byte key for the row MACs."""

    def __init__(self, path: str | Path, ddl: list[str], key: bytes, synchronous: str = "NORMAL"):
        self.conn = sqlite3.connect(str(path), isolation_level=None)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA foreign_keys = ON")
        self.sync(synchronous)
        for sql in ddl:
            self.conn.execute(
                sql.replace("CREATE TABLE ", "CREATE TABLE IF NOT EXISTS ", 1)
                .replace("CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1)
                .replace("CREATE UNIQUE INDEX ", "CREATE UNIQUE INDEX IF NOT EXISTS ", 1)
                .replace("CREATE TRIGGER ", "CREATE TRIGGER IF NOT EXISTS ", 1)
            )
        self.mac = hashlib.blake2b(key=key, digest_size=32)
        self.mac.update(_DOMAIN)
        # every column the table has: those the floor knows are filled, other nullable ones written NULL, other
        # NOT NULL ones left to their defaults (none: the floor refuses to guess)
        info = self.conn.execute("PRAGMA table_info(skill_deltas)").fetchall()
        unknown = [c for c in info if c[1] not in _KNOWN]
        guess = [c[1] for c in unknown if c[3] and c[4] is None]
        if guess:
            raise ValueError(f"the floor does not know how to fill {guess} (our DDL changed)")
        self.columns = [c[1] for c in info if c[1] in _KNOWN or not c[3]]
        self.sealed = [c for c in self.columns if c not in ("seal", "lesson_key")]
        self.insert = (
            f"INSERT INTO skill_deltas ({', '.join(self.columns)}) VALUES ({', '.join('?' * len(self.columns))})"
        )
        self.select = f"SELECT {', '.join(self.sealed)}, seal FROM skill_deltas WHERE "
        self.verified: dict[bytes, tuple] = {}  # seal -> the values it was checked against (as ours)

    def sync(self, level: str) -> None:
        self.conn.execute(f"PRAGMA synchronous = {level}")

    def close(self) -> None:
        self.conn.close()

    def _seal(self, values: tuple) -> bytes:
        h = self.mac.copy()
        h.update("\x00".join(map(str, values)).encode())
        return h.digest()

    def rows(self, skill: str, lessons: list[dict], status: str = "staged") -> tuple[list[tuple], list[tuple]]:
        """The delta rows and the audit rows for `lessons` ({section, digest, body, trigger})."""
        now = datetime.now(timezone.utc).isoformat()
        active = status == "active"
        out, audit = [], []
        for x in lessons:
            payload = _DUMPS({"body": x["body"], "trigger": x["trigger"]})
            row = {
                "id": "delta_" + secrets.token_hex(8),
                "base_name": skill,
                "scope": "user",
                "kind": "preference",
                "tier": 3,
                "anchor": _DUMPS({"section": x["section"], "digest": x["digest"]}),
                "payload": payload,
                "provenance": '{"source":"user_instruction","turns":[]}',
                "status": status,
                "success_count": 0,
                "attempt_count": 0,
                "created_at": now,
                "approved_at": now if active else None,
                "findings": "[]",
                "resident": 1,
                "approved_by": "gates" if active else None,
                "lesson_key": hashlib.sha256(f"preference\x00user\x00{payload}".encode()).hexdigest(),
            }
            row["seal"] = self._seal(tuple(row.get(c) for c in self.sealed))
            out.append(tuple(row.get(c) for c in self.columns))
            audit.append((row["id"], "gates", now, None, status, "learned preference from user_instruction"))
        return out, audit

    _AUDIT = "INSERT INTO delta_audit (delta_id, who, at, from_status, to_status, reason) VALUES (?, ?, ?, ?, ?, ?)"

    def learn_one(self, skill: str, lesson: dict) -> None:
        """One lesson: INSERT its row and its audit row, COMMIT."""
        (row,), (audit,) = self.rows(skill, [lesson])
        self.conn.execute("BEGIN")
        self.conn.execute(self.insert, row)
        self.conn.execute(self._AUDIT, audit)
        self.conn.execute("COMMIT")

    def learn_many(self, skill: str, lessons: list[dict], status: str = "staged") -> None:
        """A batch: `executemany` of the rows and of their audit rows, one COMMIT."""
        rows, audit = self.rows(skill, lessons, status)
        self.conn.execute("BEGIN")
        self.conn.executemany(self.insert, rows)
        self.conn.executemany(self._AUDIT, audit)
        self.conn.execute("COMMIT")

    def search(self, skill: str, ids: list[str] | None = None) -> list[SimpleNamespace]:
        """A skill's active rows (or those of `ids`): indexed SELECT, each row's MAC checked unless this very
        row was checked before, JSON decoded once per text, one plain object per row."""
        at = {c: i for i, c in enumerate(self.sealed)}
        i_id, i_kind, i_tier, i_anchor, i_payload, i_prov, i_status, i_created = (
            at[c] for c in ("id", "kind", "tier", "anchor", "payload", "provenance", "status", "created_at")
        )
        if ids is None:
            parts = [
                self.conn.execute(
                    self.select + "base_name = ? AND status = 'active' AND superseded_by IS NULL", (skill,)
                )
            ]
        else:
            parts = (
                self.conn.execute(self.select + f"id IN ({', '.join('?' * len(ids[k : k + 500]))})", ids[k : k + 500])
                for k in range(0, len(ids), 500)
            )
        verified, out = self.verified, []
        for cursor in parts:
            for row in cursor:
                values, seal = row[:-1], row[-1]
                if verified.get(seal) != values:
                    if self._seal(values) != seal:
                        continue
                    if len(verified) >= 100_000:
                        verified.clear()
                    verified[seal] = values
                out.append(
                    SimpleNamespace(
                        id=row[i_id],
                        kind=row[i_kind],
                        tier=row[i_tier],
                        anchor=_decoded(row[i_anchor]),
                        payload=dict(_decoded(row[i_payload])),
                        provenance=_decoded(row[i_prov]),
                        status=row[i_status],
                        created_at=row[i_created],
                    )
                )
        return out

    _ORDER = (
        "ORDER BY d.tier = 3, (d.success_count + 1.0) / (d.attempt_count + 2) DESC, "
        "coalesce(d.last_used_at, d.approved_at, d.created_at) DESC, d.created_at DESC, d.id DESC"
    )

    def keep_line_tokens(self, counts: dict[str, int]) -> None:
        """Keep each delta's line count (the harness counts them with our tokenizer, untimed)."""
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS floor_line_tokens (id TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID"
        )
        self.conn.execute("BEGIN")
        self.conn.executemany("INSERT OR REPLACE INTO floor_line_tokens VALUES (?, ?)", counts.items())
        self.conn.execute("COMMIT")

    def budgeted(self, skill: str, room: int) -> list[SimpleNamespace]:
        """The active rows that fit `room` tokens, read in the budget's order and no further: ids in that order,
        500 at a time with their kept counts, until the first lesson that does not fit; then those rows whole
        (`search`)."""
        ids, spent = [], 0
        order = self.conn.execute(
            "SELECT id FROM skill_deltas d WHERE d.base_name = ? AND d.status = 'active' "
            "AND d.superseded_by IS NULL " + self._ORDER,
            (skill,),
        )
        while chunk := [did for (did,) in order.fetchmany(500)]:
            kept = dict(
                self.conn.execute(
                    f"SELECT id, n FROM floor_line_tokens WHERE id IN ({', '.join('?' * len(chunk))})", chunk
                )
            )
            for did in chunk:
                n = kept.get(did, 0)
                if spent + n > room:
                    return self.search(skill, ids)
                spent += n
                ids.append(did)
        return self.search(skill, ids)


_DECODED: dict[str, object] = {}


def _decoded(text: str):
    """`json.loads(text)`, once per text per process (at most 100,000 kept, as ours)."""
    known = _DECODED.get(text)
    if known is None:
        known = json.loads(text)
        if len(_DECODED) >= 100_000:
            _DECODED.clear()
        _DECODED[text] = known
    return known


# ----------------------------------------------------------------------------- anchors and compose

_SLUG_DROP = re.compile(r"[^\w\- ]")


def anchors(body: str) -> list[tuple[str, int, str, str]]:
    """(slug, level, text, digest) of each section: a fence-aware ATX split, the text before the first heading as
    `_preamble`; digest: sha256 of the whitespace-normalized text (16 hex)."""
    lines = body.splitlines(keepends=True)
    starts = [0, *accumulate(map(len, lines))]
    marks: list[tuple[int, int, str]] = []  # (offset, level, heading)
    fence = ""  # the open fence's marker
    for i, line in enumerate(lines):
        s = line.lstrip(" ")
        c = s[:1]
        if not c or c not in "#`~" or len(line) - len(s) > 3:
            continue  # most lines: neither a heading nor a fence
        n = len(s) - len(s.lstrip(c))
        rest = s[n:].strip()
        if c != "#":
            if fence:
                if c == fence[0] and n >= len(fence) and not rest:
                    fence = ""
            elif n >= 3 and not (c == "`" and "`" in rest):
                fence = c * n
        elif not fence and n <= 6 and (n == len(s) or s[n] in " \t\r\n"):
            if rest.endswith("#"):  # a closing sequence
                bare = rest.rstrip("#")
                rest = bare.rstrip() if not bare or bare[-1] in " \t" else rest
            marks.append((starts[i], n, rest))
    if not marks or marks[0][0] > 0:
        marks.insert(0, (0, 0, "_preamble"))
    out, seen = [], set()
    for (start, level, heading), end in zip(marks, [m[0] for m in marks[1:]] + [len(body)]):
        base = "_preamble" if not level else _SLUG_DROP.sub("", heading.lower()).strip().replace(" ", "-") or "section"
        slug, n = base, 1
        while slug in seen:
            n += 1
            slug = f"{base}-{n}"
        seen.add(slug)
        text = body[start:end]
        out.append((slug, level, text, hashlib.sha256(" ".join(text.split()).encode()).hexdigest()[:16]))
    return out


def compose(sections: list[tuple[str, int, str, str]], deltas: list) -> str:
    """The sections in order, each followed by its deltas' lines, in (tier, kind, created_at, id) order."""
    under: dict[str, list[str]] = {}
    for d in sorted(deltas, key=lambda d: (d.tier, d.kind, d.created_at, d.id)):
        under.setdefault(d.anchor["section"], []).append(f"- {d.payload['body']}\n")
    out = []
    for slug, _, text, _ in sections:
        out.append(text)
        lines = under.get(slug)
        if lines:
            out.append("\n" + "".join(lines) + "\n")
    return "".join(out)


# ----------------------------------------------------------------------------- as a process


def _skill(skill_dir: str) -> tuple[str, str]:
    """(name, body) of a SKILL.md: the frontmatter's `name:` line and what follows the closing `---`."""
    text = Path(skill_dir, "SKILL.md").read_text(encoding="utf-8")
    _, front, body = text.split("---\n", 2)
    name = next(line.split(":", 1)[1].strip() for line in front.splitlines() if line.startswith("name:"))
    return name, body.lstrip("\n")


def main(argv: list[str]) -> None:
    """`resolve SKILL_DIR DB KEY_FILE`: print the composed skill (the CLI floor; run it as `python -m floors`,
    from bytecode). `cold SKILL_DIR DB KEY_FILE`:
    print {"s": seconds of the first search + compose in this process} (the cold-compose floor)."""
    what, skill_dir, db, key_file = argv
    name, body = _skill(skill_dir)
    store = Floor(db, [], Path(key_file).read_bytes())
    t = time.perf_counter()
    text = compose(anchors(body), store.search(name))
    took = time.perf_counter() - t
    store.close()
    print(text if what == "resolve" else json.dumps({"s": took}))


if __name__ == "__main__":
    main(sys.argv[1:])
