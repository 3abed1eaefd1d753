"""The study explorer: controls from specs, a run at the opening values, a re-run at moved ones, errors shown."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pytest
from overlay_widgets import StudyExplorer


@dataclass(frozen=True)
class Toy:
    n: int
    p: float
    policy: str
    full: bool

    def table(self) -> pd.DataFrame:
        return pd.DataFrame([{"n": self.n, "p": self.p, "policy": self.policy, "full": self.full}])

    def finding(self) -> str:
        return f"**verdict** for {self.policy}: n × p = {self.n * self.p:.2f}"


def toy(n: int = 1, p: float = 0.5, policy: str = "a", full: bool = False) -> Toy:
    if n * p > 10:
        raise ValueError("n × p above 10")
    return Toy(n, p, policy, full)


def test_it_runs_once_at_the_opening_values_and_again_when_asked():
    ex = StudyExplorer(toy, n=(1, 20, 1, 4), p=(0.0, 1.0, 0.1, 0.5), policy=["b", "a"], full=True)
    assert ex.values() == {"n": 4, "p": 0.5, "policy": "b", "full": True}
    assert ex.study == Toy(4, 0.5, "b", True)
    assert "<strong>verdict</strong> for b: n × p = 2.00" in ex.finding.value and "<table" in ex.table.value
    ex.controls["n"].value, ex.controls["policy"].value = 8, "a"
    ex.button.click()
    assert ex.study == Toy(8, 0.5, "a", True) and "n × p = 4.00" in ex.finding.value
    bundle = ex._repr_mimebundle_()
    assert "StudyExplorer: n = 8, p = 0.5, policy = a, full = True" in bundle["text/plain"]
    assert "n × p = 4.00" in bundle["text/html"]


def test_a_study_error_is_shown_and_the_last_result_kept():
    ex = StudyExplorer(toy, n=(1, 20, 1, 4), p=(0.0, 1.0, 0.1, 1.0))
    ex.controls["n"].value = 20
    assert ex.refresh() is None and "ValueError: n × p above 10" in ex.status.value
    assert ex.study == Toy(4, 1.0, "a", False)


@pytest.mark.parametrize(
    "spec, error", [((1, 2, 1), TypeError), ((5, 2, 1, 3), ValueError), ([], ValueError), ("x", TypeError)]
)
def test_a_bad_control_spec_names_its_argument(spec, error):
    with pytest.raises(error, match="^n: "):
        StudyExplorer(toy, n=spec)


def test_an_argument_the_study_does_not_take_is_refused():
    with pytest.raises(TypeError, match=r"takes no argument \['m'\]"):
        StudyExplorer(toy, m=(1, 2, 1, 1))
