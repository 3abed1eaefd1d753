"""The stale flag narrowed to what a lesson refers to (`overlay_kit.touch`), measured on real histories.

A rule event of the 54 histories of `datasets/histories/manifest.csv` (`overlay_kit.mine.RuleEvent`, mined from
local bare mirrors: `--mirrors`, default /work/.mirror) is a hand-kept rule added to a section; notebook 16 judges
the `section` policy's stale flag on it — flagged when the section's other lines changed before or at the rule's
fate, right when the rule was later reworded or deleted (`studies.histories.stale_premise`: moved events apart,
kept events followed for fewer than `min_followup` versions censored, intervals a cluster bootstrap over
repositories under rule 16's `n_boot`, `seed`, `confidence`). The touch flag raises only on a change that
touches the rule (`mine.touch_flags`: a section orphaned or gone as before, a stale one when `touch.touches`).

Decision rule, written before any held-out figure was seen: the repositories are split dev / held-out by
`datasets/histories/anchoring_split.csv` (committed before any tuning, for the anchoring benchmark). `--tune`
scores the grid below on dev only and picks the configuration with the highest dev precision among those with
dev recall >= MIN_RECALL_DEV (ties: the first in grid order). The floor was first written 0.90; on dev the
section flag itself recalls only 0.91, no configuration reached 0.90, so it was lowered to 0.87 (and the grid
given `added_shared`) on dev figures alone, before any held-out figure was seen. A third knob tried on dev —
lesson terms held by more than 30 % / 50 % of the section's lines not counting — bought precision only below the
recall floor and was dropped. Chosen on dev: rewrite_similarity 0.5, min_shared 1, added_shared 3 (dev precision
0.561, recall 0.872; the section flag there: 0.473, 0.913). The product narrows its flag
(`SHIPPED.stale_touch`) only if, on the held-out half, the touch flag's precision is above the section flag's
and its recall is >= 0.85 (point estimates; the intervals are reported beside them).

    .venv/bin/python benchmarks/touch_accuracy.py [--mirrors DIR] [--tune] [--write]

The rule and section texts stay in a local cache (~/.cache/overlay_kit/touch_events.pkl), never committed; the
default run reports the shipped parameters on both halves, `--write` stores the text-free figures in
`datasets/histories/touch_results.json`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import itertools
import json
import platform
import subprocess
import sys
from pathlib import Path

import pandas as pd
from mined_cache import SPLIT, mined, split

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from overlay_kit import mine, touch  # noqa: E402
from overlay_kit.studies import histories, rulefile  # noqa: E402

RESULTS = ROOT / "datasets/histories/touch_results.json"
CACHE = Path.home() / ".cache/overlay_kit/touch_events.pkl"  # texts: local only, never committed
GRID = {"rewrite_similarity": (0.0, 0.5), "min_shared": (1, 2), "added_shared": (None, 4, 3, 2)}
MIN_RECALL_DEV = 0.87
MIN_RECALL_HELDOUT = 0.85
FIELDS = (
    "id",
    "file",
    "fate",
    "versions_survived",
    "section_changed_before_fate",
    "section_changed_at_fate",
    "text",
    "steps",
)


def extract(mirrors: Path) -> list[dict]:
    """One row per rule event (texts included), every manifest repository mined at its commit; cached."""

    def per_repo(repo: str, commit: str) -> list[dict]:
        result = mine.mine_repository(mirrors / repo.replace("/", "+", 1) / "repo", rev=commit, label=repo)
        return [{"repo": repo, **{k: getattr(e, k) for k in FIELDS}} for e in result.events]

    return mined(CACHE, per_repo)


def frame(rows: list[dict], **params) -> pd.DataFrame:
    """The events as `stale_premise` reads them, with the touch flag under `params`."""
    df = pd.DataFrame([{k: v for k, v in r.items() if k not in ("text", "steps")} for r in rows])
    flags = [
        mine.touch_flags(r["text"], r["steps"], r["fate"] != "kept" and r["section_changed_at_fate"], **params)
        for r in rows
    ]
    df["section_touched_before_fate"] = [f[0] for f in flags]
    df["section_touched_at_fate"] = [f[1] for f in flags]
    return df


def figures(df: pd.DataFrame, rule) -> dict:
    """Both flags' confusion (`histories.touch_premise`): events, repositories, wrong later, flagged, right
    flags, false alarms, misses, precision / recall / risk difference, and the paired precision gain and recall
    loss of the touch flag."""
    t = histories.touch_premise(df, rule)

    def ci(x):
        return {"estimate": round(x.estimate, 4), "low": round(x.low, 4), "high": round(x.high, 4)}

    out = {}
    for name, key in (("section_changed", "section"), ("section_touched", "touch")):
        s = t[key]
        right = int(round(s["recall"].estimate * s["wrong"]))
        out[name] = {
            "events": s["events"],
            "repos": s["repos"],
            "wrong": s["wrong"],
            "flagged": s["flagged"],
            "right_flags": right,
            "false_alarms": s["flagged"] - right,
            "misses": s["wrong"] - right,
            **{k: ci(s[k]) for k in ("precision", "recall", "rd")},
        }
    out["precision_gain"], out["recall_loss"] = ci(t["precision_gain"]), ci(t["recall_loss"])
    return out


def _fmt(f: dict) -> str:
    return (
        f"precision {f['precision']['estimate']:.3f} [{f['precision']['low']:.2f}, {f['precision']['high']:.2f}]"
        f"  recall {f['recall']['estimate']:.3f} [{f['recall']['low']:.2f}, {f['recall']['high']:.2f}]"
        f"  flagged {f['flagged']}/{f['events']} ({f['repos']} repos)"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirrors", default="/work/.mirror")
    ap.add_argument("--tune", action="store_true", help="score the grid on dev only")
    ap.add_argument("--write", action="store_true", help=f"write {RESULTS.relative_to(ROOT)}")
    args = ap.parse_args(argv)
    rule = rulefile.load("16_real_histories")
    rows = extract(Path(args.mirrors))
    halves = split()
    by_half = {h: [r for r in rows if halves[r["repo"]] == h] for h in ("dev", "heldout")}
    if args.tune:
        keys = list(GRID)
        scored = []
        for values in itertools.product(*GRID.values()):
            params = dict(zip(keys, values))
            f = figures(frame(by_half["dev"], **params), rule)["section_touched"]
            scored.append((params, f))
            print(params, _fmt(f))
        ok = [(p, f) for p, f in scored if f["recall"]["estimate"] >= MIN_RECALL_DEV]
        best = max(ok, key=lambda pf: pf[1]["precision"]["estimate"]) if ok else None  # max keeps the first tie
        print("chosen on dev:", best[0] if best else "none reaches the recall floor")
        return 0
    shipped = {
        "rewrite_similarity": touch.REWRITE_SIMILARITY,
        "min_shared": touch.MIN_SHARED,
        "added_shared": touch.ADDED_SHARED,
    }
    report = {}
    for h, part in by_half.items():
        report[h] = figures(frame(part, **shipped), rule)
        for name in ("section_changed", "section_touched"):
            f = report[h][name]
            print(f"{h:8s} {name:16s} {_fmt(f)}  false alarms {f['false_alarms']}, misses {f['misses']}")
        g, lo = report[h]["precision_gain"], report[h]["recall_loss"]
        print(
            f"{h:8s} precision gain {g['estimate']:+.3f} [{g['low']:+.3f}, {g['high']:+.3f}], recall loss "
            f"{lo['estimate']:.3f} [{lo['low']:.3f}, {lo['high']:.3f}]"
        )
    held = report["heldout"]
    helps = (
        held["section_touched"]["precision"]["estimate"] > held["section_changed"]["precision"]["estimate"]
        and held["section_touched"]["recall"]["estimate"] >= MIN_RECALL_HELDOUT
    )
    print("verdict (held-out):", "helps: narrow the flag" if helps else "does not help: keep the section flag")
    if args.write:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        RESULTS.write_text(
            json.dumps(
                {
                    "what": "the stale flag narrowed to changes that touch the rule (overlay_kit.touch) against the section "
                    "flag, on real rule events (notebook 16's ground truth: reworded or deleted later); text-free",
                    "commit": commit,
                    "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
                    "machine": f"{platform.machine()} {platform.system()} python {platform.python_version()}",
                    "split": {
                        "file": SPLIT.name,
                        "sha256": hashlib.sha256(SPLIT.read_bytes()).hexdigest(),
                        "dev": sorted({r["repo"] for r in by_half["dev"]}),
                        "heldout": sorted({r["repo"] for r in by_half["heldout"]}),
                    },
                    "rule": {
                        "grid": {k: list(v) for k, v in GRID.items()},
                        "min_recall_dev": MIN_RECALL_DEV,
                        "min_recall_heldout": MIN_RECALL_HELDOUT,
                        "bootstrap": "16_real_histories",
                        "rule_sha256": rule.sha256,
                    },
                    "params": shipped,
                    "figures": report,
                    "helps": helps,
                },
                indent=1,
            )
            + "\n",
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
