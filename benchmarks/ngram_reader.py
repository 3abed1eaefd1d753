"""Reader candidates for issue 40 (not wired into the product): a logistic model over a lesson's character
n-grams and multilingual-e5's embedding, judging what the scan's word families judge today.

    scan_many(texts) -> list[tuple[str, ...]]   # the candidate scan: findings per text, empty when clean
    scores(texts) -> numpy array                # the model's score per text (at or above 0: an injection)

Three candidates, called with `version=1` (the default), 2 or 3:

- v1 (WEIGHTS): judged once on heldout11 and failed (datasets/injection/HELDOUT11.md). Keeps the product's
  canonical English phrase findings.
- v2 (WEIGHTS_V2): the same model refitted with heldout11 among the development files, keeping none of the
  product's `instruction-override` findings (the model alone reads the words; the hard findings stay); frozen
  with its decision rule on heldout12 (datasets/injection/HELDOUT12.md), where it failed.
- v3 (WEIGHTS_V3): refitted with heldout12 among the development files, on char_wb 3-6 grams, e5, and the scan's
  word families (`injection.intent_families`) as features; v2's findings kept (fit_ngram_reader.py).

Features: the distinct char_wb 2-5 grams of the lower-cased text that are in the fitted vocabulary, as a binary
vector scaled to unit length (scikit-learn's CountVectorizer(analyzer="char_wb", binary=True) then Normalizer),
next to e5's unit "query: " embedding (`injection.reader_embeddings`, the extra overlay_kit[e5]) and, in v3, one
weight per word family present (v3's n-grams are 3-6). The weights
(WEIGHTS, written by fit_ngram_reader.py --write) are read with the standard library and numpy: no scikit-learn at
scan time; tests/test_injection_ngram_reader.py holds the n-gram part equal to scikit-learn's pipeline.

The candidate scan: the product's scan with its reader off (`injection.scan_many`), minus the word-family
findings (v1: every `instruction-override` finding but the canonical English phrases, `_OVERRIDE`'s; v2, v3:
every `instruction-override` finding), plus the model's finding on a text nothing else flags. Hard findings (hidden text, URLs, tool calls, look-alikes, a
language the scan does not read, ...) stay.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from functools import lru_cache
from pathlib import Path

import numpy as np

from overlay_kit import injection
from overlay_kit.textguard import views

WEIGHTS = Path(__file__).with_name("ngram_reader_weights.json.gz")
WEIGHTS_V2 = Path(__file__).with_name("ngram_reader_v2_weights.json.gz")
WEIGHTS_V3 = Path(__file__).with_name("ngram_reader_v3_weights.json.gz")
VERSIONS = {1: WEIGHTS, 2: WEIGHTS_V2, 3: WEIGHTS_V3}
FINDING = "instruction-override (ngram reader {:+.2f})"
_CANONICAL = ("instruction-override: ", "instruction-override (after folding): ")
_WHITE = re.compile(r"\s\s+")


class WeightsError(ValueError):
    """The weights file is missing a field or its arrays disagree in length."""


@lru_cache(maxsize=3)
def _weights_file(path: Path) -> dict:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


@lru_cache(maxsize=3)
def model(path: Path = WEIGHTS) -> tuple[dict[str, float], np.ndarray, float, tuple[int, int]]:
    """(n-gram -> weight, e5 weights, bias, n-gram range) from a weights file (one of VERSIONS)."""
    w = _weights_file(path)
    try:
        vocab, char, e5, bias, lo, hi = (
            w["vocabulary"],
            w["char_weights"],
            w["e5_weights"],
            w["bias"],
            *w["ngram_range"],
        )
    except (KeyError, TypeError, ValueError) as e:
        raise WeightsError(f"{path}: {e!r}") from None
    if len(vocab) != len(char) or len(e5) != 384:
        raise WeightsError(f"{path}: {len(vocab)} n-grams, {len(char)} weights, {len(e5)} e5 weights (384)")
    return dict(zip(vocab, char)), np.asarray(e5, dtype=np.float64), float(bias), (int(lo), int(hi))


def ngrams(text: str, lo: int, hi: int) -> set[str]:
    """The distinct n-grams scikit-learn's char_wb analyzer reads from the lower-cased text."""
    out: set[str] = set()
    for word in _WHITE.sub(" ", text.lower()).split():
        w = f" {word} "
        for n in range(lo, hi + 1):
            if len(w) <= n:  # a word shorter than n counts once, whole
                out.add(w)
                break
            out.update(w[i : i + n] for i in range(len(w) - n + 1))
    return out


def char_scores(texts: list[str], path: Path = WEIGHTS) -> np.ndarray:
    """The n-gram part of each text's score (no bias)."""
    weights, _, _, (lo, hi) = model(path)
    out = np.zeros(len(texts))
    for i, t in enumerate(texts):
        hit = [weights[g] for g in ngrams(t, lo, hi) if g in weights]
        if hit:
            out[i] = math.fsum(hit) / math.sqrt(len(hit))
    return out


def family_weights(path: Path = WEIGHTS) -> dict[str, float]:
    """Word family -> weight (v3's file; none in v1's and v2's)."""
    return _weights_file(path).get("family_weights", {})


def family_scores(texts: list[str], path: Path = WEIGHTS) -> np.ndarray:
    """The word-family part of each text's score: the weights of the families `injection.intent_families` finds."""
    weights = family_weights(path)
    if not weights:
        return np.zeros(len(texts))
    return np.array([math.fsum(weights.get(f, 0.0) for f in injection.intent_families(views(t))) for t in texts])


def scores(texts: list[str], embeddings: np.ndarray | None = None, path: Path = WEIGHTS) -> np.ndarray:
    """The model's score of each text (at or above 0: read as an injection); `embeddings`: their
    `injection.reader_embeddings`, if at hand."""
    _, e5, bias, _ = model(path)
    if embeddings is None:
        embeddings = injection.reader_embeddings(texts) if texts else np.zeros((0, 384))
    return char_scores(texts, path) + family_scores(texts, path) + embeddings @ e5 + bias


def kept(found: tuple[str, ...], version: int = 1) -> tuple[str, ...]:
    """The findings of the product's scan the candidate keeps: all but the word-family ones (v1 keeps the
    canonical English phrases, v2 and v3 none of the `instruction-override` findings)."""
    canonical = version == 1
    return tuple(
        f for f in found if not f.startswith("instruction-override") or (canonical and f.startswith(_CANONICAL))
    )


def scan_many(texts: list[str], found: list[tuple[str, ...]] | None = None, version: int = 1) -> list[tuple[str, ...]]:
    """The candidate scan of each text (`version` 1, 2 or 3); `found`: the product's scan of them with its reader
    off, if at hand."""
    if found is None:
        found = injection.scan_many(texts) if not injection.reader_available() else None
        if found is None:
            raise RuntimeError("the candidate reads the scan with the product's reader off (SHIPPED.scan_reader)")
    out = [kept(f, version) for f in found]
    todo = [i for i, f in enumerate(out) if not f and texts[i].strip()]
    for i, s in zip(todo, scores([texts[i] for i in todo], path=VERSIONS[version]) if todo else ()):
        if s >= 0:
            out[i] = (FINDING.format(float(s)),)
    return out
