"""Prompt composition: a stable prefix, a volatile tail, and what each turn costs to re-prefill.

An inference engine keeps the KV cache of the previous request and re-uses it up to the first token that
differs, so every token after the first changed byte is prefilled again. The system prompt is therefore
split in two (seed design, "Correction 3"):

* the **stable prefix** — authored skill text and other content that is fixed for the whole session;
* the **volatile tail** — the tools block and anything else allowed to change between turns.

The learned fragment goes to one of them by policy: ``"prefix"`` opens the system prompt, ahead of the
authored text — where the shipped recall path composes its recalled-procedure block, and the worst case of
rendering learned lines inside the authored sections; ``"tail"`` ends the system prompt, after the tools
block. The conversation follows the system prompt. `reprefill_tokens`
counts, with the bundled Llama tokenizer, the tokens after the first changed byte between two consecutive
prompts — the cost of one turn under a placement policy.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal, Sequence

from .bundled import llama_tokenizer
from .common import FieldError

__all__ = ["POLICIES", "Policy", "Prompt", "PromptError", "compose", "count_many", "count_tokens", "reprefill_tokens"]

Policy = Literal["prefix", "tail"]
POLICIES: tuple[str, ...] = ("prefix", "tail")
ROLES = ("user", "assistant")
BLOCK_SEP = "\n\n"


class PromptError(FieldError):
    """A prompt could not be composed; names the offending field."""


@dataclass(frozen=True)
class Prompt:
    """System prompt (= prefix + tail) followed by the conversation (`history`, role/content pairs)."""

    prefix: str
    tail: str = ""
    history: tuple[tuple[str, str], ...] = ()
    policy: str = "tail"
    learned: str = ""

    @property
    def system(self) -> str:
        return self.prefix + self.tail

    @property
    def text(self) -> str:
        """The prompt as one string in the order the engine sees it (a fixed, prefix-preserving rendering)."""
        turns = "".join(f"\n\n<|{role}|>\n{content}" for role, content in self.history)
        return self.system + turns

    def messages(self) -> list[dict]:
        """OpenAI chat messages: one system message, then the conversation."""
        return [{"role": "system", "content": self.system}] + [
            {"role": role, "content": content} for role, content in self.history
        ]

    def then(self, role: str, content: str) -> "Prompt":
        """The same prompt with one more conversation message appended."""
        if role not in ROLES:
            raise PromptError("role", f"{role!r} is not one of {ROLES}")
        return Prompt(self.prefix, self.tail, self.history + ((role, content),), self.policy, self.learned)


def _join(*blocks: str) -> str:
    return BLOCK_SEP.join(b for b in blocks if b)


def compose(
    stable: str | Sequence[str],
    learned: str = "",
    volatile: str | Sequence[str] = "",
    *,
    policy: str = "tail",
    history: Sequence[tuple[str, str]] = (),
) -> Prompt:
    """Build a `Prompt`; the learned fragment opens the prefix (`"prefix"`) or ends the tail (`"tail"`).

    `stable` and `volatile` are one block or a sequence of blocks, joined by a blank line.
    """
    if policy not in POLICIES:
        raise PromptError("policy", f"{policy!r} is not one of {POLICIES}")
    stable_text = stable if isinstance(stable, str) else _join(*stable)
    volatile_text = volatile if isinstance(volatile, str) else _join(*volatile)
    for i, item in enumerate(history):
        if len(item) != 2 or item[0] not in ROLES or not isinstance(item[1], str):
            raise PromptError(f"history[{i}]", f"expected (role in {ROLES}, text), got {item!r}")
    if policy == "prefix":
        prefix = _join(learned, stable_text)
        tail = volatile_text
    else:
        prefix = stable_text
        tail = _join(volatile_text, learned)
    if prefix and tail:  # the separator belongs to the tail so that the prefix itself never changes
        tail = BLOCK_SEP + tail
    return Prompt(prefix, tail, tuple((r, c) for r, c in history), policy, learned)


def count_many(texts: Sequence[str]) -> list[int]:
    """Tokens of each text with the bundled Llama-2 tokenizer (no BOS/EOS), in one batched (Rust-side) call:
    the project's one token counter (never len/4)."""
    if not texts:
        return []
    return [len(e.ids) for e in llama_tokenizer().encode_batch(list(texts), add_special_tokens=False)]


def count_tokens(text: str) -> int:
    """Tokens of one text: a batch of one."""
    return count_many([text])[0]


def _text(p: Prompt | str | None) -> str:
    return "" if p is None else p if isinstance(p, str) else p.text


def reprefill_tokens(prev: Prompt | str | None, curr: Prompt | str) -> int:
    """Tokens of `curr` that an engine re-prefills after serving `prev` with prefix KV reuse.

    Counts every token of `curr` that ends after the first byte at which the two prompts differ (a token
    straddling the change is recomputed too). `prev=None` is a cold start: the whole prompt.
    """
    a, b = _text(prev), _text(curr)
    if a == b:
        return 0
    changed = len(os.path.commonprefix([a, b]))  # index of the first changed character (= byte boundary)
    offsets = llama_tokenizer().encode(b, add_special_tokens=False).offsets
    return sum(1 for _, end in offsets if end > changed)
