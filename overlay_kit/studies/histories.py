"""Study 16: real instruction-file histories — do the overlay's premises hold on them?

Reads the text-free records `scripts/mine_histories.py` mined from the repositories of
`datasets/histories/manifest.csv` (`overlay_kit.mine`: versions, pairs with the `section` policy's decisions and
an edit class, rule events with their fates) and judges them under `datasets/rules/16_real_histories.yaml`:

- the stale premise — is a hand-kept rule whose section's authored text changed later reworded or deleted more
  often than one whose section did not? (the overlay's stale flag as a predictor: precision, recall, risk
  difference);
- the touch flag (`touch_premise`): the stale flag raised only by changes that touch the rule
  (`overlay_kit.touch`), beside the section flag, with the paired precision gain and recall loss;
- anchor survival on real edits, pooled and per edit class (1 − orphaned / old sections);
- the append premise (the share of body-changing pairs that only add);
- growth (lines, rule units, duplicates per file);
- calibration: the same miner over 05's synthetic profiles (`mine.mine_texts`), each figure within the real
  interval or not, by how much;
- the labelled anchoring set: every rule event as (file, version, section, line).

Every interval is a cluster bootstrap over repositories (`metrics.bootstrap_ci`, ratio of sums).

    study = histories.run()      # the committed derived data and rule
    study.table()                # one row per figure: estimate, interval, bound, verdict
    study.finding()              # Markdown: the answer first, then the detail
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import mine
from ..metrics import Interval, bootstrap_ci
from ..resources import dataset_path
from . import rulefile, sim
from .finding import Finding, render
from .rulefile import RuleFile

__all__ = [
    "DERIVED",
    "MANIFEST",
    "RESERVED",
    "HistoriesStudy",
    "anchoring_set",
    "build",
    "load",
    "run",
    "stale_by_class",
    "synthetic",
    "text_free",
    "touch_premise",
]

DERIVED = ("histories", "derived.json.gz")
MANIFEST = ("histories", "manifest.csv")
# Kept back for independent checks of this study (issue 39): never mined here.
RESERVED = frozenset(
    {
        "anthropics/skills",
        "obra/superpowers",
        "openai/skills",
        "K-Dense-AI/claude-scientific-skills",
        "trailofbits/skills",
        "muratcankoylan/Agent-Skills-for-Context-Engineering",
    }
)
ADDING = ("append-only", "section-added")
WRONG = ("reworded", "deleted")
SLUG_FIELDS = ("section", "target", "fate_section")


# ------------------------------------------------------------------------------------------- the corpus


def _slug_hash(slug: str | None) -> str | None:
    return None if slug is None else hashlib.sha256(slug.encode("utf-8")).hexdigest()[:12]


def text_free(records: dict) -> dict:
    """The miner's records with every section slug (made of heading words) replaced by a 12-character sha256
    prefix — the same for the same slug, so sections still match across records."""

    def scrub(row: dict) -> dict:
        row = {k: _slug_hash(v) if k in SLUG_FIELDS else v for k, v in row.items()}
        if "decisions" in row:
            row["decisions"] = [scrub(d) for d in row["decisions"]]
        if "added_sections" in row:
            row["added_sections"] = [_slug_hash(x) for x in row["added_sections"]]
        return row

    return {k: [scrub(r) for r in v] if isinstance(v, list) else v for k, v in records.items()}


def _repository(name: str, mirrors: Path | None, cache: Path) -> Path:
    """A bare mirror `MIRRORS/<owner>+<name>/repo` if there is one, else a bare clone in `cache` (cloned from GitHub
    on first use: the only step that needs the network)."""
    key = name.replace("/", "+", 1)
    if mirrors is not None and (Path(mirrors) / key / "repo").is_dir():
        return Path(mirrors) / key / "repo"
    path = Path(cache) / f"{key}.git"
    if not path.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "--bare", "--quiet", f"https://github.com/{name}.git", str(path)], check=True)
    return path


def build(
    *,
    manifest: str | Path | None = None,
    out: str | Path | None = None,
    mirrors: str | Path | None = None,
    cache: str | Path | None = None,
) -> dict:
    """Mine every manifest repository at its commit (`overlay_kit.mine`) into text-free records, written gzipped
    to `out` (default: the committed `datasets/histories/derived.json.gz`) whole or not at all. The texts stay in
    the mirrors or the cache (`~/.cache/overlay_kit/histories`)."""
    from tqdm.auto import tqdm

    manifest = Path(manifest or dataset_path(*MANIFEST))
    with open(manifest, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    reserved = sorted(RESERVED & {r["repository"] for r in rows})
    if reserved:
        raise ValueError(f"{manifest}: reserved for independent checks, never mined here: {', '.join(reserved)}")
    cache = Path(cache or Path.home() / ".cache" / "overlay_kit" / "histories")
    merged: dict = {"manifest": {"file": manifest.name, "sha256": hashlib.sha256(manifest.read_bytes()).hexdigest()}}
    for row in tqdm(rows, desc="repositories"):
        result = mine.mine_repository(
            _repository(row["repository"], mirrors, cache), rev=row["commit"], label=row["repository"]
        )
        for k, v in text_free(result.to_records()).items():
            merged.setdefault(k, [] if isinstance(v, list) else {})
            merged[k].extend(v) if isinstance(v, list) else merged[k].update(v)
    out = Path(out or dataset_path(*DERIVED))
    tmp = out.with_name(f".{out.name}.part")
    tmp.write_bytes(
        gzip.compress(
            json.dumps(merged, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8"), mtime=0
        )
    )
    tmp.replace(out)
    return merged


def load(path: str | Path | None = None) -> dict[str, pd.DataFrame]:
    """The derived records as data frames (`repos`, `files`, `versions`, `pairs`, `events`), each row tagged with
    its repository (`repo`)."""
    raw = json.loads(gzip.decompress(Path(path or dataset_path(*DERIVED)).read_bytes()))
    files = pd.DataFrame(raw["files"])
    repo_of = dict(zip(files["id"], files["repo"]))
    out = {"repos": pd.DataFrame(raw["repos"]), "files": files}
    for name in ("versions", "pairs", "events"):
        frame = pd.DataFrame(raw[name])
        frame["repo"] = frame["file"].map(repo_of)
        out[name] = frame
    return out


def _sums(df: pd.DataFrame, columns: dict[str, pd.Series]) -> pd.DataFrame:
    """Per-repository sums of the given 0/1 (or count) columns: the bootstrap's independent units."""
    return (
        pd.DataFrame({"repo": df["repo"], **{k: v.astype(float) for k, v in columns.items()}})
        .groupby("repo", sort=True)
        .sum()
    )


def _ratio(per: pd.DataFrame, num: str, den: str, rule: RuleFile) -> Interval:
    kw = {"n_resamples": rule.param("n_boot"), "seed": rule.param("seed"), "confidence": rule.param("confidence")}
    if per[den].sum() == 0:
        return Interval(float("nan"), float("nan"), float("nan"), rule.param("confidence"), len(per))
    return bootstrap_ci(
        per[num].to_numpy(),
        per[den].to_numpy(),
        statistic=lambda a, b, axis=-1: a.sum(axis=axis) / np.where(b.sum(axis=axis) == 0, np.nan, b.sum(axis=axis)),
        **kw,
    )


def _difference(per: pd.DataFrame, rule: RuleFile) -> Interval:
    """P(wrong | flagged) − P(wrong | not flagged), resampling repositories."""
    kw = {"n_resamples": rule.param("n_boot"), "seed": rule.param("seed"), "confidence": rule.param("confidence")}

    def rd(a, b, c, d, axis=-1):
        with np.errstate(invalid="ignore", divide="ignore"):
            return a.sum(axis=axis) / b.sum(axis=axis) - c.sum(axis=axis) / d.sum(axis=axis)

    return bootstrap_ci(
        *(per[k].to_numpy() for k in ("wrong_flagged", "flagged", "wrong_unflagged", "unflagged")), statistic=rd, **kw
    )


def _three_way(ci: Interval, bound: float, above: str, below: str, *, strict: bool = False) -> str:
    """`above` when the interval's lower end clears `bound` (> when strict, else ≥), `below` when its upper end is
    under it, else "undecided"."""
    if not np.isfinite(ci.estimate):
        return "no data"
    if ci.low > bound or (not strict and ci.low == bound):
        return above
    if ci.high < bound:
        return below
    return "undecided"


def _needed(ci: Interval, margin: float) -> int:
    """Repositories a decision at this margin would need: n × (half-width / margin)²."""
    half = (ci.high - ci.low) / 2
    return int(np.ceil(ci.n * (half / margin) ** 2)) if margin > 0 and np.isfinite(half) else 0


def stale_premise(events: pd.DataFrame, rule: RuleFile, *, edits_only: bool = False, flag: str | None = None) -> dict:
    """The stale flag's confusion on rule events: precision, recall, risk difference (see the rule). `flag` names
    another flag of the events (`"section_touched"`: only changes that touch the rule, `overlay_kit.touch`)."""
    col = flag or ("section_edited" if edits_only else "section_changed")
    ev = events[events["fate"] != "moved"]
    ev = ev[~((ev["fate"] == "kept") & (ev["versions_survived"] < rule.param("min_followup")))]
    wrong = ev["fate"].isin(WRONG)
    flagged = ev[f"{col}_before_fate"] | ev[f"{col}_at_fate"]
    per = _sums(
        ev,
        {
            "wrong_flagged": wrong & flagged,
            "flagged": flagged,
            "wrong": wrong,
            "wrong_unflagged": wrong & ~flagged,
            "unflagged": ~flagged,
        },
    )
    return {
        "events": len(ev),
        "repos": int((per["flagged"] + per["unflagged"] > 0).sum()),
        "moved": int((events["fate"] == "moved").sum()),
        "censored": int(
            ((events["fate"] == "kept") & (events["versions_survived"] < rule.param("min_followup"))).sum()
        ),
        "wrong": int(wrong.sum()),
        "flagged": int(flagged.sum()),
        "precision": _ratio(per, "wrong_flagged", "flagged", rule),
        "recall": _ratio(per, "wrong_flagged", "wrong", rule),
        "rd": _difference(per, rule),
    }


def touch_premise(events: pd.DataFrame, rule: RuleFile, repos: Iterable[str] | None = None) -> dict:
    """The stale flag narrowed to changes that touch the rule (`section_touched_*`, `overlay_kit.touch`) beside
    the section flag, on the events `stale_premise` judges (of `repos` only, when given): each flag's
    `stale_premise`, and the paired differences over the same repositories — `precision_gain` (touch − section)
    and `recall_loss` (section − touch)."""
    if repos is not None:
        events = events[events["repo"].isin(set(repos))]
    section, touched = stale_premise(events, rule), stale_premise(events, rule, flag="section_touched")
    ev = events[events["fate"] != "moved"]
    ev = ev[~((ev["fate"] == "kept") & (ev["versions_survived"] < rule.param("min_followup")))]
    wrong = ev["fate"].isin(WRONG)
    f_s = ev["section_changed_before_fate"] | ev["section_changed_at_fate"]
    f_t = ev["section_touched_before_fate"] | ev["section_touched_at_fate"]
    per = _sums(ev, {"ws": wrong & f_s, "fs": f_s, "wt": wrong & f_t, "ft": f_t, "w": wrong})
    kw = {"n_resamples": rule.param("n_boot"), "seed": rule.param("seed"), "confidence": rule.param("confidence")}
    cols = [per[k].to_numpy() for k in ("ws", "fs", "wt", "ft", "w")]

    def gain(ws, fs, wt, ft, w, axis=-1):
        with np.errstate(invalid="ignore", divide="ignore"):
            return wt.sum(axis=axis) / ft.sum(axis=axis) - ws.sum(axis=axis) / fs.sum(axis=axis)

    def loss(ws, fs, wt, ft, w, axis=-1):
        with np.errstate(invalid="ignore", divide="ignore"):
            return (ws.sum(axis=axis) - wt.sum(axis=axis)) / w.sum(axis=axis)

    return {
        "section": section,
        "touch": touched,
        "precision_gain": bootstrap_ci(*cols, statistic=gain, **kw),
        "recall_loss": bootstrap_ci(*cols, statistic=loss, **kw),
    }


def stale_by_class(events: pd.DataFrame, pairs: pd.DataFrame, rule: RuleFile) -> dict[str, Interval]:
    """The stale flag's precision per edit class of the update that first flagged the rule (the pair whose new
    version is `first_section_change`), over the events `stale_premise` judges."""
    ev = events[events["fate"] != "moved"]
    ev = ev[~((ev["fate"] == "kept") & (ev["versions_survived"] < rule.param("min_followup")))]
    ev = ev[ev["section_changed_before_fate"] | ev["section_changed_at_fate"]]
    cls = pairs.set_index(["file", "new"])["edit_class"]
    ev = ev.assign(edit_class=[cls.get((f, int(v))) for f, v in zip(ev["file"], ev["first_section_change"])])
    return {
        c: _ratio(
            _sums(g, {"wrong": g["fate"].isin(WRONG), "flagged": pd.Series(True, g.index)}), "wrong", "flagged", rule
        )
        for c, g in sorted(ev.groupby("edit_class"))
    }


def survival(pairs: pd.DataFrame, rule: RuleFile) -> dict[str, Interval]:
    """1 − orphaned / old sections over body-changing pairs: pooled (`all`) and per edit class."""
    changed = pairs[pairs["body_changed"] & (pairs["sections_old"] > 0)]
    out = {}
    for name, group in [("all", changed), *sorted(changed.groupby("edit_class"))]:
        per = _sums(group, {"kept": group["sections_old"] - group["orphaned"], "old": group["sections_old"]})
        out[name] = _ratio(per, "kept", "old", rule)
    return out


def append_share(pairs: pd.DataFrame, rule: RuleFile) -> Interval:
    changed = pairs[pairs["body_changed"]]
    per = _sums(changed, {"adding": changed["edit_class"].isin(ADDING), "pairs": pd.Series(True, changed.index)})
    return _ratio(per, "adding", "pairs", rule)


def class_shares(pairs: pd.DataFrame, rule: RuleFile | None = None) -> dict[str, Interval | float]:
    """The share of each edit class among body-changing pairs (intervals over repositories with a rule)."""
    changed = pairs[pairs["body_changed"]]
    out = {}
    for cls in mine.EDIT_CLASSES:
        if cls == "frontmatter-only":
            continue
        hit = changed["edit_class"] == cls
        if rule is None:
            out[cls] = float(hit.mean()) if len(hit) else float("nan")
        else:
            out[cls] = _ratio(
                _sums(changed, {"hit": hit, "pairs": pd.Series(True, changed.index)}), "hit", "pairs", rule
            )
    return out


def growth(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per file (≥ 2 versions): its last version's lines, rule units and (near-)duplicate units, lines added
    per update, rule events made."""
    versions, pairs, events = frames["versions"], frames["pairs"], frames["events"]
    last = versions.sort_values("version", kind="stable").groupby("file").tail(1).set_index("file")
    files = frames["files"].set_index("id")
    files = files[files["versions"] >= 2]
    out = pd.DataFrame(
        {
            "repo": files["repo"],
            "versions": files["versions"],
            "lines": last["lines"].reindex(files.index),
            "rule_units": last["rule_units"].reindex(files.index),
            "duplicate_units": last["duplicate_units"].reindex(files.index),
            "near_duplicate_units": last["near_duplicate_units"].reindex(files.index),
            "lines_added_per_update": pairs.groupby("file")["lines_added"].mean().reindex(files.index),
            "rule_events": events.groupby("file").size().reindex(files.index).fillna(0).astype(int),
        }
    )
    return out


def synthetic(rule: RuleFile) -> pd.DataFrame:
    """The same miner over 05's synthetic profiles: one row of pairs per profile (`mine.mine_texts`)."""
    rows = []
    for profile in rule.param("synthetic_profiles"):
        histories = [
            sim.generate_history(profile, rule.param("synthetic_versions"), 0, seed=s)
            for s in range(rule.param("synthetic_histories"))
        ]
        result = mine.mine_texts(
            [(f"{profile}/{s}/SKILL.md", "SKILL.md", [v.text for v in h.versions]) for s, h in enumerate(histories)],
            repo=f"synthetic:{profile}",
        )
        records = result.to_records()
        pairs = pd.DataFrame(records["pairs"])
        pairs["repo"] = pairs["file"]  # a history is the unit
        pairs["profile"] = profile
        rows.append(pairs)
    return pd.concat(rows, ignore_index=True)


def anchoring_set(events: pd.DataFrame) -> pd.DataFrame:
    """The labelled anchoring set: for each real rule event, the section (slug hash) and line a person put it in."""
    return events[
        ["id", "repo", "file", "version", "commit", "section", "line_index", "section_lines", "at_end", "kind", "hash"]
    ].reset_index(drop=True)


def _where(value: float, ci: Interval) -> str:
    if not np.isfinite(value) or not np.isfinite(ci.low):
        return "n/a"
    if ci.low <= value <= ci.high:
        return "within"
    return f"differs by {value - (ci.high if value > ci.high else ci.low):+.3f}"


@dataclass(frozen=True)
class HistoriesStudy:
    rule: RuleFile
    frames: dict
    stale: dict
    stale_edits: dict
    stale_classes: dict
    survival: dict
    append: Interval
    shares: dict
    synthetic: pd.DataFrame
    growth: pd.DataFrame

    @property
    def premise(self) -> str:
        return _three_way(self.stale["rd"], self.rule.param("rd_margin"), "supported", "not supported", strict=True)

    @property
    def world(self) -> str:
        p, floor = self.stale["precision"], self.rule.param("world_precision_floor")
        if p.high < floor:
            return f"the world's premise differs, by {1 - p.estimate:.2f}"
        return "within" if p.low >= floor else "undecided"

    def table(self) -> pd.DataFrame:
        r, s, e = self.rule, self.stale, self.stale_edits
        syn = {p: g for p, g in self.synthetic.groupby("profile")}
        rows = [
            (
                "stale flag: risk difference P(wrong|flagged) − P(wrong|not)",
                s["rd"],
                f"> {r.param('rd_margin')}",
                self.premise,
            ),
            (
                "stale flag: precision P(wrong later | flagged)",
                s["precision"],
                f"world assumes 1; synthetic {r.param('synthetic_precision')}",
                _where(r.param("synthetic_precision"), s["precision"]),
            ),
            (
                "stale flag: recall P(flagged | wrong later)",
                s["recall"],
                "world: 1 by construction",
                _where(1.0, s["recall"]),
            ),
            (
                "edits only: risk difference",
                e["rd"],
                f"> {r.param('rd_margin')}",
                _three_way(e["rd"], r.param("rd_margin"), "supported", "not supported", strict=True),
            ),
            ("edits only: precision", e["precision"], "", ""),
            ("edits only: recall", e["recall"], "", ""),
            (
                "anchor survival, body-changing pairs",
                self.survival["all"],
                f"≥ {r.param('survival_bound')}",
                _three_way(self.survival["all"], r.param("survival_bound"), "holds", "fails"),
            ),
            (
                "append share of body-changing pairs",
                self.append,
                f"≥ {r.param('append_bound')}",
                _three_way(self.append, r.param("append_bound"), "holds", "fails"),
            ),
        ]
        for profile, g in syn.items():
            kept = 1 - g.loc[g["body_changed"], "orphaned"].sum() / max(
                g.loc[g["body_changed"], "sections_old"].sum(), 1
            )
            share = g.loc[g["body_changed"], "edit_class"].isin(ADDING).mean()
            rows += [
                (
                    f"synthetic {profile}: anchor survival",
                    Interval(kept, np.nan, np.nan),
                    "real interval",
                    _where(kept, self.survival["all"]),
                ),
                (
                    f"synthetic {profile}: append share",
                    Interval(share, np.nan, np.nan),
                    "real interval",
                    _where(share, self.append),
                ),
            ]
        for cls, ci in self.shares.items():
            syn_share = "; ".join(
                f"{p} {(g.loc[g['body_changed'], 'edit_class'] == cls).mean():.3f} "
                f"({_where((g.loc[g['body_changed'], 'edit_class'] == cls).mean(), ci)})"
                for p, g in syn.items()
            )
            rows.append((f"edit class share: {cls}", ci, f"synthetic: {syn_share}", ""))
        for cls, ci in self.survival.items():
            if cls != "all":
                rows.append((f"anchor survival: {cls}", ci, "", ""))
        for cls, ci in self.stale_classes.items():
            rows.append((f"stale flag precision, flagged by: {cls}", ci, "", ""))
        return pd.DataFrame(
            [
                {
                    "figure": name,
                    "estimate": ci.estimate,
                    "low": ci.low,
                    "high": ci.high,
                    "bound or reference": bound,
                    "verdict": verdict,
                }
                for name, ci, bound, verdict in rows
            ]
        )

    def finding(self) -> str:
        r, s, e = self.rule, self.stale, self.stale_edits
        f = self.frames
        five = f["files"][f["files"]["versions"] >= r.param("min_versions_reported")]
        g = self.growth
        margin, synthetic = r.param("rd_margin"), r.param("synthetic_precision")
        findings = [
            Finding.of(
                "**Stale premise**, risk difference P(reworded or deleted later | section changed) − P(… | not)",
                s["rd"],
                bound=margin,
                side=">",
                verdict=f"**{self.premise}**",
                note=f"a decision needs about {_needed(s['rd'], margin)} repositories"
                if self.premise == "undecided"
                else "",
            ),
            Finding.of(
                "the same, counting only edits that remove or alter an authored line",
                e["rd"],
                bound=margin,
                side=">",
                verdict=_three_way(e["rd"], margin, "supported", "not supported", strict=True),
            ),
            Finding.of(
                "**Anchor survival** over real body edits",
                self.survival["all"],
                bound=r.param("survival_bound"),
                side="≥",
                verdict=_three_way(self.survival["all"], r.param("survival_bound"), "holds", "fails"),
                spec=".2f",
            ),
            Finding.of(
                "**Append premise**, share of body edits that only add",
                self.append,
                bound=r.param("append_bound"),
                side="≥",
                verdict=_three_way(self.append, r.param("append_bound"), "holds", "fails"),
                spec=".2f",
            ),
            Finding.of(
                "**Against notebook 10's world** (a changed section makes its lessons wrong: precision 1 by "
                "construction), the stale flag's real precision",
                s["precision"],
                bound=r.param("world_precision_floor"),
                side="≥",
                verdict=self.world,
                spec=".2f",
            ),
            Finding(
                f"issue 37's count on 10's FULL grid (precision {synthetic}) against the real interval",
                None,
                verdict=_where(synthetic, s["precision"]),
            ),
        ]
        outro = [
            f"The stale flag's precision is {s['precision'].fmt('.2f')} and recall {s['recall'].fmt('.2f')}, so a "
            f"flag is {'mostly a false alarm' if s['precision'].estimate < 0.5 else 'mostly right'} and "
            f"{s['recall'].estimate:.0%} of rules that went wrong were flagged first.",
            r.stamp(),
            f"**Corpus.** {len(f['repos'])} repositories (`datasets/histories/manifest.csv`, the six reserved "
            f"ones excluded), {len(f['files'])} instruction files, {len(five)} with ≥ "
            f"{r.param('min_versions_reported')} versions (from {five['repo'].nunique()} repositories), "
            f"{len(f['pairs'])} consecutive pairs, {len(f['events'])} rule events (the labelled anchoring set).",
            f"**Stale premise** ({s['events']} events from {s['repos']} repositories; {s['moved']} moved events "
            f"apart, {s['censored']} kept events followed for fewer than {r.param('min_followup')} versions "
            f"censored): {s['wrong']} went wrong later (reworded or deleted), {s['flagged']} were flagged. "
            f"Counting only edits that remove or alter an authored line: precision {e['precision'].fmt('.2f')}, "
            f"recall {e['recall'].fmt('.2f')}. By the edit that first flagged the rule, precision is "
            + ", ".join(
                f"{c} {ci.estimate:.2f}" for c, ci in sorted(self.stale_classes.items(), key=lambda kv: -kv[1].estimate)
            )
            + " (intervals in the table).",
            f"**Growth** (files with ≥ 2 versions, medians): {g['lines'].median():.0f} lines and "
            f"{g['rule_units'].median():.0f} rule units at the last version, {g['lines_added_per_update'].median():.1f} "
            f"lines added per update, {g['rule_events'].median():.0f} rule events; "
            f"{(g['duplicate_units'] > 0).mean():.1%} of files hold an exact duplicate rule and "
            f"{(g['near_duplicate_units'] > 0).mean():.1%} a near duplicate (ratio ≥ {r.param('duplicate_ratio')}). "
            "Contradictions are not detected (that needs a model).",
        ]
        intro = f"**Answer.** On {len(f['repos'])} real repositories, the overlay's premises against the rule:"
        return render(findings, intro=intro, outro=outro)


def run(*, rule: RuleFile | str | None = None, path: str | Path | None = None) -> HistoriesStudy:
    rule = rule if isinstance(rule, RuleFile) else rulefile.load(rule or "16_real_histories")
    frames = load(path)
    return HistoriesStudy(
        rule,
        frames,
        stale_premise(frames["events"], rule),
        stale_premise(frames["events"], rule, edits_only=True),
        stale_by_class(frames["events"], frames["pairs"], rule),
        survival(frames["pairs"], rule),
        append_share(frames["pairs"], rule),
        class_shares(frames["pairs"], rule),
        synthetic(rule),
        growth(frames),
    )
