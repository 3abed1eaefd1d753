"""Notebook 06's study: `tuning.run(...)` → `.table()` and a `.finding()` from the rule stated before the data."""

from __future__ import annotations

from resolve_fixtures import triage_inbox

from overlay_kit.studies import tuning


def test_run_table_has_one_row_per_corpus_seed_and_ceiling():
    study = tuning.run([triage_inbox()], {"light": 10, "typical": 30}, seeds=(0, 1), ceilings=(1024, 2048, 4096))
    t = study.table()
    assert len(t) == 2 * 2 * 3 and set(t.corpus) == {"light", "typical"}
    assert (t.groupby(["corpus", "seed"]).resident_tokens.apply(lambda s: s.is_monotonic_increasing)).all()


def test_the_finding_follows_the_rule_and_can_come_out_every_way():
    skill = [triage_inbox()]
    rec = tuning.run(skill, {"typical": 30}, ceilings=(1024, 2048, 4096, 16384))
    fits = rec.fits_all("typical")
    assert fits is not None and rec.recommended() == fits < 16384
    assert f"Recommend a ceiling of {fits:,} tokens" in rec.finding() and "**larger than needed**" in rec.finding()
    small = tuning.run(skill, {"typical": 30}, ceilings=(1024,))  # nothing in the grid holds every lesson
    assert small.recommended() is None and "No ceiling in the grid meets the rule" in small.finding()
    big = tuning.run(skill, {"typical": 30}, ceilings=(fits,))
    assert "**too small**" in tuning.BudgetStudy(big.rows, default=fits // 2).finding()
    assert "**right**" in tuning.BudgetStudy(big.rows, default=fits).finding()
