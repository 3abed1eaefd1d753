"""One set of shipped defaults: the product reads `overlay_kit.defaults.SHIPPED`, and every study and the
deployment simulator start from it (a study that varies a default names it)."""

import ast
import inspect
from datetime import timedelta
from pathlib import Path

import pytest

import overlay_kit
from overlay_kit import budget, evidence, gates, rebase, resolve, retrieval, store, tools
from overlay_kit.cli import build_parser
from overlay_kit.defaults import SHIPPED, Defaults
from overlay_kit.studies import cost, deploy, kpis, tuning


def _default(func, name):
    return inspect.signature(func).parameters[name].default


def _scope_policy(write) -> str:
    """The scope policy a write path ships, read from what it writes: an unscoped lesson learned for agent `a`
    is kept by it ("agent") or shared by every agent of the user ("user")."""
    from overlay_support import make_skill

    with store.Store.open(":memory:", agent="a") as s:
        skill = make_skill("scope-probe")
        args = ("preference", {"body": "Keep replies short."})
        if write is gates.learn_many:
            d = write(
                s, skill, [{"kind": args[0], "payload": args[1], "section": "triage", "provenance": "user_instruction"}]
            )[0].delta
        else:
            d = write(s, skill, *args, section="triage", provenance="user_instruction").delta
        return {"agent:a": "agent", "user": "user"}[d.scope]


# (where the product reads it, the SHIPPED field): each fails if the product ships something else
PRODUCT = [
    (lambda: budget.Budget(None, [], 10**6).reserve, "retrieval_reserve"),  # (capped at an eighth of the ceiling)
    (lambda: _default(budget.propose_consolidations, "threshold"), "consolidate_score"),
    (lambda: _default(budget.Budget, "ceiling"), "ceiling"),
    (lambda: _default(budget.plan, "ceiling"), "ceiling"),
    (lambda: _default(budget.enforce, "ceiling"), "ceiling"),
    (lambda: _default(gates.promote, "min_samples"), "min_samples"),
    (lambda: _default(gates.promote, "threshold"), "threshold"),
    (lambda: _default(gates.promote, "wilson"), "wilson"),
    (lambda: _default(gates.promote, "z"), "z"),
    (lambda: _default(evidence.review_staged, "min_samples"), "min_samples"),
    (lambda: _default(evidence.review_staged, "threshold"), "threshold"),
    (lambda: _default(evidence.review_staged, "wilson"), "wilson"),
    (lambda: _default(evidence.review_staged, "retire_below"), "retire_below"),
    (lambda: gates.GateSettings().noop_repeats, "noop_repeats"),
    (lambda: _scope_policy(gates.learn), "scope"),
    (lambda: _scope_policy(gates.learn_many), "scope"),
    (lambda: _default(store.Store.open, "auto_approve"), "auto_approve"),
    (lambda: _default(rebase.apply, "policy"), "rebase_policy"),
    (lambda: _default(rebase.plan, "policy"), "rebase_policy"),
    (lambda: _default(resolve.resolve, "stale_policy"), "stale_policy"),
    (lambda: _default(resolve.compose, "stale_policy"), "stale_policy"),
    (lambda: _default(resolve.Session, "stale_policy"), "stale_policy"),
    (lambda: _default(tools.ToolLoader, "max_tools"), "max_tools"),
    (lambda: _default(resolve.resolve, "ceiling"), "ceiling"),
]


@pytest.mark.parametrize("read, field", PRODUCT, ids=[f"{f}-{i}" for i, (_, f) in enumerate(PRODUCT)])
def test_the_product_ships_the_shipped_defaults(read, field):
    assert read() == getattr(SHIPPED, field)


def test_load_embedder_loads_the_shipped_embedder(monkeypatch):
    loaded = []
    monkeypatch.setattr(retrieval, "_load", lambda name: loaded.append(name) or name)
    retrieval.load_embedder()
    assert loaded == [retrieval._NAMES.get(SHIPPED.embedder, SHIPPED.embedder)]


def test_one_name_per_shipped_default():
    """The product reads `SHIPPED.<field>`; no module keeps a copy of a shipped field under another name
    (`budget.DEFAULT_CEILING` was one)."""
    root = Path(overlay_kit.__file__).resolve().parent
    copies = []
    for path in [*root.rglob("*.py"), *(root.parent / "widgets").rglob("*.py")]:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "SHIPPED":
                copies.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    assert copies == []


def test_decay_and_the_cli_read_them_too():
    assert evidence.DEFAULT_IDLE == (
        None if SHIPPED.decay_idle_days is None else timedelta(days=SHIPPED.decay_idle_days)
    )
    assert build_parser("rebase").parse_args(["rebase", "a", "b"]).policy == SHIPPED.rebase_policy


def test_the_deployment_simulator_starts_from_what_ships():
    s = deploy.Settings()
    assert SHIPPED.varied(s) == {}
    assert s.tau is None and SHIPPED.retrieval_gate == "calibrated"  # the embedder's shipped calibrated gate
    assert s.headroom is None  # the shipped ceiling


def test_varied_names_what_a_study_changes():
    assert SHIPPED.varied(deploy.Settings(min_samples=3, retire_below=0.5)) == {
        "min_samples": (5, 3),
        "retire_below": (None, 0.5),
    }
    assert SHIPPED.varied({"ceiling": 6144, "seed": 1}) == {"ceiling": (16384, 6144)}
    assert Defaults(max_tools=9).varied(SHIPPED) == {"max_tools": (9, 14)}


def test_the_kpi_study_always_sweeps_the_shipped_value(monkeypatch):
    seen = {}

    def fake_study(axes, **kw):  # records the grid the study would run
        seen.update(axes)
        return kpis.pd.DataFrame()

    monkeypatch.setattr(kpis, "study", fake_study)
    study = kpis.run({"min_samples": [1, 3, 8], "tau": [0.3, 0.6], "auto_approve": [False, True]}, seeds=[0])
    assert seen == {"min_samples": [1, 3, 8, 5], "tau": [0.3, 0.6, None], "auto_approve": [False, True]}
    assert study.defaults == {"min_samples": 5, "tau": None, "auto_approve": False}


def test_the_budget_and_cost_studies_read_the_shipped_ceiling():
    assert tuning.BudgetStudy.__dataclass_fields__["default"].default == SHIPPED.ceiling
    assert SHIPPED.ceiling in tuning.CEILINGS
    assert cost.StudyInputs.__dataclass_fields__["budget_ceiling"].default == SHIPPED.ceiling
