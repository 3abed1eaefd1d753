"""The bundled static embedder: numpy over the `wordllama` wheel's weights, held equal to its slow, obviously-correct
form — sentence-transformers' `StaticEmbedding` over the same weights, the bundled embedder before issue 36 — so the
vectors stored and the gate calibrated under `bundled.EMBEDDER_ID` stay valid.

Tolerance: every coordinate within 1e-5 of the oracle's (measured: 3e-8 on the corpus below; float32 sums in
another order), a text with no tokens the zero vector in both."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overlay_kit import bundled, retrieval

ROOT = Path(__file__).resolve().parents[1]
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def oracle():
    """The old bundled embedder: a sentence-transformers model of one `StaticEmbedding` module (torch)."""
    from safetensors.torch import load_file
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding
    from tokenizers import Tokenizer

    weights = load_file(str(bundled.embedding_path()))["embedding.weight"].float()
    model = SentenceTransformer(
        modules=[StaticEmbedding(Tokenizer.from_file(str(bundled.tokenizer_path())), embedding_weights=weights)],
        device="cpu",
    )
    return retrieval.TextEmbedder(model, "oracle/static-embedding")


@pytest.fixture(scope="module")
def emb():
    return retrieval.load_embedder()


def _corpus() -> list[str]:
    """Every distinct goal, trigger and lesson body of the τ corpus (582 texts), and a few edge cases."""
    pairs = pd.read_csv(ROOT / "datasets" / "tau" / "pairs.csv")
    lessons = pd.read_csv(ROOT / "datasets" / "tau" / "lessons.csv")
    texts = list(dict.fromkeys([*pairs["goal"], *pairs["trigger"], *lessons["body"]]))
    return texts + ["", "   ", "\n\n", "日本語のテキスト", "🙂 ok", "x" * 5000, "Ünïcödé naïve café"]


def test_the_bundled_embedder_is_the_numpy_static_model_under_the_old_identity(emb):
    assert isinstance(emb, retrieval.StaticEmbedder) and isinstance(emb.model, retrieval.StaticModel)
    assert emb.id == bundled.EMBEDDER_ID == retrieval.StaticEmbedder.id
    assert retrieval.static_embedder() is emb is retrieval.load_embedder("wordllama")
    assert emb.dim == 256


def test_vectors_equal_the_sentence_transformers_oracle_on_the_tau_corpus(emb, oracle):
    texts = _corpus()
    assert len(texts) > 500
    new, old = emb.encode(texts), oracle.encode(texts)
    assert new.shape == old.shape == (len(texts), 256) and new.dtype == np.float32
    assert np.abs(new - old).max() <= TOLERANCE
    assert not np.any(new[texts.index("")])  # no tokens: the zero vector, as EmbeddingBag gives (never NaN)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=80), min_size=1, max_size=12))
def test_any_batch_equals_the_oracle_and_each_text_alone(emb, oracle, texts):
    batch = emb.encode(texts)
    assert np.abs(batch - oracle.encode(texts)).max() <= TOLERANCE
    alone = np.vstack([emb.encode([t]) for t in texts])
    assert np.abs(batch - alone).max() <= 1e-6  # a single call is a batch of one
    norms = np.linalg.norm(batch, axis=1)
    assert np.all((np.abs(norms - 1) < 1e-5) | (norms == 0))


def test_batches_split_anywhere_give_the_same_vectors(emb):
    texts = _corpus()[:300]
    whole = emb.model.encode(texts, batch_size=1000)
    assert np.array_equal(whole, emb.model.encode(texts, batch_size=7))


def test_the_shipped_calibration_applies_to_it(emb):
    gate, path = retrieval.gate_for(emb.id)
    assert path.parent.name == "gates" and str(gate).startswith("top-1")


@pytest.mark.parametrize("saved_by", ["oracle", "numpy"])
def test_a_sentence_transformers_folder_of_the_same_weights_loads_by_path(emb, oracle, tmp_path, saved_by):
    (oracle if saved_by == "oracle" else emb).model.save(str(tmp_path / "st"))  # the numpy model writes one too
    other = retrieval.load_embedder(str(tmp_path / "st"))
    assert other.id.startswith("sentence-transformers:") and other.id != emb.id
    texts = _corpus()[:200]
    assert np.abs(emb.encode(texts) - other.encode(texts)).max() <= TOLERANCE


def test_loading_and_encoding_imports_neither_torch_nor_sentence_transformers():
    code = (
        "import sys; from overlay_kit import retrieval; e = retrieval.load_embedder(); e.encode(['a goal']); "
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers', 'wordllama') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
