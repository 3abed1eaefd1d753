"""A study's decision rule as a small versioned file, fixed before the data it judges.

    rule = rulefile.load("08_cost_of_learning")   # datasets/rules/08_cost_of_learning.yaml
    rule.param("ttft_bound")                       # a number the verdict is computed from
    rule.stamp()                                   # what a notebook prints: name, version, sha256, what was seen

A rule file is YAML with these fields (any other is refused, so a typo cannot pass unnoticed):

    study:     the notebook it judges (its file name without .ipynb)
    version:   an integer, raised whenever the rule changes
    written:   the date it was written (YYYY-MM-DD)
    seen:      what of the data was known when it was written ("nothing" for a rule that truly came first;
               otherwise which earlier figures: a rule changed after its data were seen says so here)
    question:  the question the study answers
    rule:      the decision rule in words
    params:    the numbers the verdict is computed from (grid, seeds, bounds, tie-break, stopping)

The file is added in a commit of its own, before the commit whose notebook prints its numbers; the notebook
prints `stamp()` (with the file's sha256), and `tests/test_rulefiles.py` checks in git history that the file
with that hash was committed first.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

import yaml

from ..resources import dataset_path

__all__ = ["RuleFile", "RuleFileError", "load", "rules_dir"]

FIELDS = ("study", "version", "written", "seen", "question", "rule", "params")


class RuleFileError(ValueError):
    """A rule file that cannot be read: names the file and the field."""

    def __init__(self, path: str | Path, field: str, message: str):
        self.path, self.field = str(path), field
        super().__init__(f"{path}: {field}: {message}")


def rules_dir() -> Path:
    return dataset_path("rules")


@dataclass(frozen=True)
class RuleFile:
    path: Path
    sha256: str
    study: str
    version: int
    written: str
    seen: str
    question: str
    rule: str
    params: Mapping[str, Any]

    def param(self, name: str) -> Any:
        """One of `params`; a `RuleFileError` naming the file and field if the rule does not state it."""
        if name not in self.params:
            raise RuleFileError(self.path, f"params.{name}", "not stated by this rule")
        return self.params[name]

    def stamp(self) -> str:
        """One line for the notebook: which rule, which exact file, and what was known when it was written."""
        return (
            f"Rule `{self.path.name}` v{self.version} (sha256 {self.sha256[:12]}), written {self.written}; "
            f"seen before writing it: {self.seen}"
        )


def load(name: str | Path) -> RuleFile:
    """The rule file `datasets/rules/NAME.yaml` (or a path to one), checked field by field."""
    path = Path(name) if str(name).endswith((".yaml", ".yml")) else rules_dir() / f"{name}.yaml"
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise RuleFileError(path, "file", f"cannot read: {exc.strerror or exc}") from exc
    try:
        doc = yaml.safe_load(raw.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise RuleFileError(path, "file", f"not UTF-8 YAML: {exc}") from exc
    if not isinstance(doc, dict):
        raise RuleFileError(path, "file", "must be a mapping of " + ", ".join(FIELDS))
    for key in doc:
        if key not in FIELDS:
            raise RuleFileError(path, str(key), "unknown field; fields are " + ", ".join(FIELDS))
    for key in FIELDS:
        if key not in doc:
            raise RuleFileError(path, key, "missing")
    for key in ("study", "seen", "question", "rule"):
        if not isinstance(doc[key], str) or not doc[key].strip():
            raise RuleFileError(path, key, "must be non-empty text")
    if not isinstance(doc["version"], int) or isinstance(doc["version"], bool) or doc["version"] < 1:
        raise RuleFileError(path, "version", "must be an integer ≥ 1")
    written = doc["written"]
    if isinstance(written, str):
        try:
            written = dt.date.fromisoformat(written)
        except ValueError:
            pass
    if not isinstance(written, dt.date):
        raise RuleFileError(path, "written", "must be a date YYYY-MM-DD")
    if not isinstance(doc["params"], dict) or not all(isinstance(k, str) for k in doc["params"]):
        raise RuleFileError(path, "params", "must be a mapping of names to values")
    if path.stem != doc["study"]:
        raise RuleFileError(path, "study", f"{doc['study']!r} differs from the file's name {path.stem!r}")
    return RuleFile(
        path,
        hashlib.sha256(raw).hexdigest(),
        doc["study"],
        doc["version"],
        written.isoformat(),
        " ".join(doc["seen"].split()),
        " ".join(doc["question"].split()),
        doc["rule"].strip(),
        MappingProxyType(dict(doc["params"])),
    )
