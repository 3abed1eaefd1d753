"""Fixtures several test modules share (a module's own fixture of the same name takes precedence)."""

from __future__ import annotations

import pytest
from overlay_support import MAIL_BODY

from overlay_kit.store import Store

# Modules whose results rest on cosines or BLAS (retrieval, rebase proposals, consolidation, tool selection and the
# studies that read them). `make test` runs them a second time under another OpenBLAS kernel and torch's portable
# kernels (`-m kernel`), so a decision that moves with the CPU fails on every machine, not only on a reviewer's.
KERNEL_SENSITIVE = {
    "test_architectures",
    "test_cross_cpu",
    "test_decay_study",
    "test_deploy",
    "test_evidence",
    "test_kpis",
    "test_memory_bench",
    "test_rebase",
    "test_rebase_sweep",
    "test_retrieval",
    "test_scope_study",
    "test_threshold",
    "test_tools",
    "test_tuning",
    "test_world",
}


def pytest_collection_modifyitems(items):
    for item in items:
        if item.module.__name__ in KERNEL_SENSITIVE:
            item.add_marker(pytest.mark.kernel)


@pytest.fixture(scope="session", autouse=True)
def seal_key(tmp_path_factory):
    """The row-seal key for the whole run (CLI subprocesses inherit it) in a scratch folder, not the user's
    config folder; a test that needs its own sets `OVERLAY_KIT_KEY_FILE` again."""
    with pytest.MonkeyPatch.context() as mp:
        path = tmp_path_factory.mktemp("config") / "seal.key"
        mp.setenv("OVERLAY_KIT_KEY_FILE", str(path))
        yield path


@pytest.fixture
def own_key(tmp_path, monkeypatch):
    """A key of this test's own (so its own registry beside it): the env variable wins over the config folder."""
    from overlay_kit import seal

    path = tmp_path / "config" / "seal.key"
    monkeypatch.setenv(seal.KEY_ENV, str(path))
    return path


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "o.db") as s:
        yield s


@pytest.fixture
def research(tmp_path):
    with Store.open(tmp_path / "r.db", research=True) as s:
        yield s


@pytest.fixture
def skill_dir(tmp_path):
    """A skill directory `mail` (version 2.0, tools search_mail, draft_reply, send_email) under tmp_path/skills."""
    d = tmp_path / "skills" / "mail"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(
        "---\nname: mail\ndescription: triage mail\nmetadata:\n  gaia:\n    version: '2.0'\n"
        "    tools: [search_mail, draft_reply, send_email]\n---\n" + MAIL_BODY
    )
    return d
