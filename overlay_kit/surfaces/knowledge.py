"""Knowledge base: sourced documents whose visibility to an agent is separate from their update.

    kb = KnowledgeBase(store, summarizer=None)      # lead_summary unless you pass one (pick_summarizer)
    kb.ingest(doc_id, markdown, title=None) -> Document   # import or re-ingest: status pending
    kb.mark_ready(doc_id) -> Document                # the review step: pending → ready
    kb.search(query) -> [Hit]                        # ready documents only
    kb.set_summary(doc_id, text) -> Document         # a reviewer's (manual) summary
    kb.wait()                                        # block until queued summary jobs are done (notebooks, tests)

Update order on ingest (one transaction): Markdown normalized with mdformat (CommonMark, on markdown-it-py) →
heading outline rebuilt with `overlay_kit.anchor.parse` → body, outline, revision + 1, status `pending`, and
the summary cleared (it described the prior body). Then, outside the write, the summary is regenerated on a
worker thread. Before persisting, the job rereads the document: a result for an older revision, or for a
document that now has a reviewer's summary, is discarded — a late result never overwrites a manual summary,
and a slow or failed one never undoes the content write. Every job's outcome lands in `knowledge_events`.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mdformat
from markdown_it import MarkdownIt

from ..anchor import BODY, PREAMBLE, parse
from ..common import utc_now
from ..store import Document, Heading
from .routing import BackgroundService, SurfaceError, answering_model, ask_model

if TYPE_CHECKING:
    from ..store import Store

# Document and Heading are the store's row values (overlay_kit.store); re-exported here.
__all__ = [
    "Document",
    "Heading",
    "Hit",
    "KnowledgeBase",
    "KnowledgeError",
    "LLMSummarizer",
    "lead_summary",
    "normalize_markdown",
    "outline",
    "pick_summarizer",
]

log = logging.getLogger(__name__)
DOC_LIMIT = 2_000_000
SUMMARY_LIMIT = 2_000
_DOC_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,127}")
_WORD = re.compile(r"\w+")


class KnowledgeError(SurfaceError):
    """Bad input to the knowledge base (empty document, bad id, unknown document, a transition not allowed)."""


@dataclass(frozen=True)
class Hit:
    doc_id: str
    title: str
    section: str
    heading: str
    score: int


def normalize_markdown(text: str) -> str:
    """NFC, then mdformat's CommonMark rendering (ATX headings, `-` bullets, one blank line, LF endings)."""
    if not isinstance(text, str):
        raise KnowledgeError(f"expected Markdown text, got {type(text).__name__}", "markdown")
    if len(text) > DOC_LIMIT:
        raise KnowledgeError(f"{len(text)} characters; at most {DOC_LIMIT}", "markdown")
    out = mdformat.text(unicodedata.normalize("NFC", text))
    if not out.strip():
        raise KnowledgeError("the document is empty", "markdown")
    return out


def outline(body: str) -> tuple[Heading, ...]:
    """The heading outline, derived with the same section parser the skill overlay anchors to."""
    return tuple(
        Heading(s.slug, s.heading, s.level, s.start_line) for s in parse(body) if s.slug not in (PREAMBLE, BODY)
    )


# ------------------------------------------------------------------------------------ summarizers

Summarizer = Callable[[str], str]
_MD = MarkdownIt("commonmark")


def lead_summary(body: str) -> str:
    """Deterministic: the first sentence of the first paragraph (else the headings), at most 240 characters."""
    tokens = _MD.parse(body)
    for i, tok in enumerate(tokens):
        if tok.type == "inline" and i > 0 and tokens[i - 1].type == "paragraph_open":
            text = " ".join(tok.content.split())
            return re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0][:240]
    heads = [h.heading for h in outline(body)]
    return ("Sections: " + ", ".join(heads))[:240] if heads else body.strip()[:240]


class LLMSummarizer:
    """Asks a local model for a one- or two-sentence summary. An empty reply raises."""

    def __init__(self, client: Any, model: str):
        self.client, self.model = client, model

    def __call__(self, body: str) -> str:
        text = ask_model(
            self.client, self.model, "Summarize this document in one or two sentences.", body, max_tokens=160
        ).strip()
        if not text:
            raise KnowledgeError("the model returned an empty summary", "summary")
        return text


def pick_summarizer(client: Any = None, model: str | None = None) -> Summarizer:
    name = answering_model(client, model)
    return LLMSummarizer(client, name) if name else lead_summary


# ----------------------------------------------------------------------------------- the service


class KnowledgeBase(BackgroundService):
    """The knowledge surface over one store. Summary jobs run on one background worker thread."""

    def __init__(
        self, store: "Store", summarizer: Summarizer | None = None, *, executor: ThreadPoolExecutor | None = None
    ):
        self.store = store
        self.summarizer = summarizer if summarizer is not None else lead_summary
        super().__init__(executor, "overlay-knowledge")
        self.jobs: dict[tuple[str, int], Future] = {}  # (doc id, revision) -> future of the job's outcome

    def get(self, doc_id: str) -> Document:
        """Any document, pending or ready (management review sees both)."""
        doc = self.store.knowledge.get(doc_id)
        if doc is None:
            raise KnowledgeError(f"no document {doc_id!r}", "doc_id")
        return doc

    def documents(self, status: str | None = None) -> list[Document]:
        return self.store.knowledge.documents(status)

    def _event(self, doc_id: str, revision: int, event: str, detail: str = "") -> None:
        self.store.knowledge.add_event(doc_id, revision, event, detail)

    def events(self, doc_id: str | None = None) -> list[tuple[str, int, str, str]]:
        return self.store.knowledge.events(doc_id)

    def ingest(self, doc_id: str, markdown: str, *, title: str | None = None, summarize: bool = True) -> Document:
        """Import or re-ingest: normalize, rebuild the outline, store as `pending` with no summary; then queue
        the summary job. The document is invisible to search until `mark_ready`."""
        if not isinstance(doc_id, str) or not _DOC_ID.fullmatch(doc_id):
            raise KnowledgeError(f"{doc_id!r} is not a document id (letters, digits, . _ / -; ≤128)", "doc_id")
        if title is not None and (not isinstance(title, str) or not title.strip() or len(title) > 300):
            raise KnowledgeError("must be a non-empty string of at most 300 characters", "title")
        body = normalize_markdown(markdown)
        heads = outline(body)
        title = title or (heads[0].heading if heads else doc_id)
        with self.store.transaction():
            previous = self.store.knowledge.revision(doc_id)
            revision = previous + 1
            self.store.knowledge.put(doc_id, title=title, body=body, outline=heads, revision=revision, at=utc_now())
            self._event(doc_id, revision, "ingested", "re-ingest" if previous else "import")
        if summarize:
            self.jobs[(doc_id, revision)] = self._executor.submit(self._summary_job, doc_id, revision)
        return self.get(doc_id)

    def mark_ready(self, doc_id: str, who: str = "reviewer") -> Document:
        """The review step: pending → ready (searchable)."""
        with self.store.transaction():
            doc = self.get(doc_id)
            if doc.status == "ready":
                raise KnowledgeError(f"document {doc_id!r} is already ready", "doc_id")
            self.store.knowledge.set_ready(doc_id, utc_now())
            self._event(doc_id, doc.revision, "ready", f"by {who}")
        return self.get(doc_id)

    def set_summary(self, doc_id: str, text: str, who: str = "reviewer") -> Document:
        """A reviewer-authored summary. It wins over any generated one until the next re-ingest."""
        if not isinstance(text, str) or not text.strip() or len(text) > SUMMARY_LIMIT:
            raise KnowledgeError(f"must be a non-empty string of at most {SUMMARY_LIMIT} characters", "summary")
        with self.store.transaction():
            doc = self.get(doc_id)
            self.store.knowledge.set_manual_summary(doc_id, text.strip(), utc_now())
            self._event(doc_id, doc.revision, "summary_manual", f"by {who}")
        return self.get(doc_id)

    def _summary_job(self, doc_id: str, revision: int) -> str:
        """Generate, then persist only if the document is still that revision and has no manual summary."""
        try:
            doc = self.get(doc_id)
            if doc.revision != revision:
                return self._finish(doc_id, revision, "stale", "superseded before generation")
            text = self.summarizer(doc.body)
            if not isinstance(text, str) or not text.strip():
                raise KnowledgeError("the summarizer returned no text", "summary")
            with self.store.transaction():
                row = self.store.knowledge.summary_state(doc_id)  # reread before persisting
                if row is None or row[0] != revision:
                    self._event(doc_id, revision, "summary_stale", "the document moved on")
                    return "stale"
                if row[1] == "manual":
                    self._event(doc_id, revision, "summary_manual_kept", "a reviewer's summary wins")
                    return "manual_kept"
                self.store.knowledge.set_auto_summary(doc_id, text.strip()[:SUMMARY_LIMIT])
                self._event(doc_id, revision, "summary_written")
            return "written"
        except Exception as exc:  # a failed enhancement never undoes the content write
            return self._finish(doc_id, revision, "failed", f"{type(exc).__name__}: {exc}")

    def _finish(self, doc_id: str, revision: int, outcome: str, detail: str) -> str:
        try:
            with self.store.transaction():
                self._event(doc_id, revision, "summary_" + outcome, detail)
        except Exception:
            log.exception("summary job for %s@%s: %s (%s), not recorded", doc_id, revision, outcome, detail)
        return outcome

    def wait(self, timeout: float | None = None) -> dict[tuple[str, int], str]:
        """Block until every queued summary job is done; their outcomes by (doc id, revision)."""
        wait(list(self.jobs.values()), timeout=timeout)
        return {k: f.result() for k, f in self.jobs.items() if f.done()}

    def search(self, query: str, limit: int = 5) -> list[Hit]:
        """Sections of READY documents that contain the most query words (pending documents never answer)."""
        if not isinstance(query, str) or not _WORD.search(query):
            raise KnowledgeError("must contain at least one word", "query")
        terms = {w.casefold() for w in _WORD.findall(query)}
        hits = []
        for doc in self.documents("ready"):
            for s in parse(doc.body):
                words = {w.casefold() for w in _WORD.findall(s.text)}
                score = len(terms & words)
                if score:
                    hits.append(Hit(doc.id, doc.title, s.slug, s.heading, score))
        return sorted(hits, key=lambda h: -h.score)[:limit]

    def knowledge_map(self) -> list[tuple[str, str, tuple[Heading, ...]]]:
        """What an agent can see: (id, title, outline) of every ready document."""
        return [(d.id, d.title, d.outline) for d in self.documents("ready")]
