"""A real browser: JupyterLab on 127.0.0.1, Debian's chromium driven by Playwright, the tour run end to end.

The test copies the tour notebook (and the budget notebook) into a scratch directory beside a link to the
repository's datasets, starts JupyterLab there on a random free port with a random token, opens the tour in
chromium, runs every cell through the Run menu, clicks **Approve** on the last ReviewPanel and then reads the
SQLite file the notebook wrote to confirm the delta is active (and audited as approved by the user).
Screenshots go to tests/artifacts/; the README's ReviewPanel and BudgetTuner screenshots (docs/img/) are
written when missing or when OVERLAY_KIT_SCREENSHOTS=1. Every stored notebook is also opened as stored, untrusted
and trusted (no red "disconnected" widget icon; panels say "Stored view"), and `make lab` itself is started to
read the settings it opens JupyterLab with (document autosave off).

Skipped, loudly, when chromium is not at /usr/bin/chromium (`make test` installs it when run as root).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "tests" / "artifacts"
DOCS_IMG = ROOT / "docs" / "img"
RUN_TIMEOUT_MS = 240_000

pytestmark = pytest.mark.browser


def _skip_reason() -> str | None:
    if not CHROMIUM.exists():
        how = (
            "`make test` as root installs it"
            if os.geteuid() == 0
            else "run `make test` as root, or `sudo apt-get install chromium`"
        )
        return f"BROWSER TEST SKIPPED: Debian chromium is not installed at {CHROMIUM} ({how})"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "BROWSER TEST SKIPPED: the playwright package is missing (pip install -e '.[dev]')"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _settings(path: Path) -> None:
    """Lab settings for a scripted run: every cell in the DOM (no windowing), no news prompt, no autosave."""
    files = {
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
            "fetchNews": "false",
            "checkForUpdates": False,
        },
        "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    }
    for name, value in files.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(value))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    reason = _skip_reason()
    if reason:
        print(f"\n{'!' * 20} {reason} {'!' * 20}", file=sys.stderr)
        pytest.skip(reason)
    from jupyter_client.kernelspec import KernelSpecManager

    home = tmp_path_factory.mktemp("lab")
    (home / "notebooks").mkdir()
    for nb in (ROOT / "notebooks").glob("*.ipynb"):  # as stored, and never trusted here (a fresh data dir)
        shutil.copy(nb, home / "notebooks" / nb.name)
    (home / "datasets").symlink_to(ROOT / "datasets")
    (home / "dbs").mkdir()
    _settings(home / "settings")
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "OVERLAY_KIT_TOUR_DIR": str(home / "dbs"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_PREFER_ENV_PATH": "1",
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_DATA_DIR": str(home / "data"),
    }  # trust db
    # the notebooks run on this environment's ipykernel (the venv's), not a user-level kernelspec
    spec = KernelSpecManager().get_kernel_spec("python3")
    assert Path(spec.resource_dir).resolve().is_relative_to(Path(sys.prefix).resolve()), spec.resource_dir
    cmd = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        "--ServerApp.open_browser=False",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={home}",
    ]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(home / "jupyter.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=home)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                pytest.fail(f"JupyterLab did not start:\n{(home / 'jupyter.log').read_text()[-3000:]}")
            time.sleep(0.5)
        yield {"base": base, "token": token, "home": home, "env": env}
    finally:
        try:
            req = urllib.request.Request(f"{base}/api/shutdown?token={token}", method="POST")
            urllib.request.urlopen(req, timeout=5).close()
            proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(home / "jupyter.log", ARTIFACTS / "jupyter.log")


@pytest.fixture(scope="module")
def browser(lab):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"])
        try:
            yield b
        finally:
            b.close()


FRONT = ".jp-NotebookPanel:not(.lm-mod-hidden)"  # the notebook in front (others may sit in hidden tabs)
PROMPTS = f"[...document.querySelectorAll('{FRONT} .jp-CodeCell .jp-InputArea-prompt')].map(e => e.textContent)"
COUNTED = r"t => /\[\d+\]/.test(t)"  # a prompt with an execution count


def _run_all(page, lab, notebook: str, n_code_cells: int) -> None:
    """Open a notebook, wait for its kernel, Run → Run All Cells, wait until every cell has a count."""
    page.goto(f"{lab['base']}/lab/tree/notebooks/{notebook}?token={lab['token']}&reset")
    page.wait_for_selector(f"{FRONT} .jp-Cell", timeout=90_000)
    page.wait_for_function(
        r"() => [...document.querySelectorAll('.jp-StatusBar-TextItem')]"
        r".some(e => /\| Idle/.test(e.textContent))",
        timeout=120_000,
    )  # the kernel is up
    _menu(page, "Edit", "Clear Outputs of All Cells")  # the stored outputs' counts must not look finished
    page.wait_for_function(f"() => !{PROMPTS}.some({COUNTED})", timeout=30_000)
    _menu(page, "Run", "Run All Cells")
    page.wait_for_function(
        f"n => {{ const p = {PROMPTS}; return p.length === n && p.every({COUNTED}); }}",
        arg=n_code_cells,
        timeout=RUN_TIMEOUT_MS,
    )
    errors = page.locator(f"{FRONT} .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    tracebacks = [t for t in errors.all_inner_texts() if "Traceback" in t or "Error" in t]
    assert not tracebacks, tracebacks[:2]


def _menu(page, menu: str, item: str) -> None:
    page.locator(".lm-MenuBar-item", has_text=menu).first.click()
    page.locator(".lm-Menu-item:visible", has_text=item).first.click()


def _code_cells(name: str) -> int:
    nb = json.loads((ROOT / "notebooks" / name).read_text())
    return sum(c["cell_type"] == "code" for c in nb["cells"])


def _shot(locator, name: str, publish: str | None = None) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    locator.scroll_into_view_if_needed()
    locator.screenshot(path=str(ARTIFACTS / name))
    if publish and (os.environ.get("OVERLAY_KIT_SCREENSHOTS") == "1" or not (DOCS_IMG / publish).exists()):
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copy(ARTIFACTS / name, DOCS_IMG / publish)


def _deltas(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return list(conn.execute("SELECT id, status FROM skill_deltas WHERE base_name = 'triage-inbox'"))


def test_tour_runs_in_jupyterlab_and_approve_activates_the_delta(lab, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 2400})  # tall: the whole first panel in view
    try:
        _run_all(page, lab, "01_overlay_tour.ipynb", _code_cells("01_overlay_tour.ipynb"))
        dbs = list((lab["home"] / "dbs").glob("overlay-tour-*/overlay.db"))
        assert len(dbs) == 1, dbs
        [(delta_id, status)] = _deltas(dbs[0])  # forget erased the rest; the last lesson waits for review
        assert status == "staged"

        panels = page.locator(f"{FRONT} .overlay-review")
        assert panels.count() == 2
        first = panels.first.inner_text()  # as of its cell: the four pending lessons, not the next cell's approvals
        assert "Pending (4)" in first and "Active (0)" in first and first.count("erased by forget") == 4
        assert panels.first.get_by_role("button", name="Approve").count() == 0  # erased: nothing left to approve
        _shot(panels.first, "review_panel_tour.png", publish="review_panel.png")
        last = panels.last
        last.scroll_into_view_if_needed()
        last.get_by_role("button", name="Approve").click()
        last.get_by_text(f"approve {delta_id}: done").wait_for(timeout=30_000)
        assert _deltas(dbs[0]) == [(delta_id, "active")]
        with sqlite3.connect(f"file:{dbs[0]}?mode=ro", uri=True) as conn:
            who = conn.execute(
                "SELECT who, from_status, to_status FROM delta_audit WHERE delta_id = ? ORDER BY seq DESC LIMIT 1",
                (delta_id,),
            ).fetchone()
        assert who == ("user", "staged", "active")
        assert last.get_by_role("button", name="Undo").is_enabled()  # the undo handle is offered
        _shot(last, "review_panel_approved.png")
        page.screenshot(path=str(ARTIFACTS / "tour_full.png"), full_page=True)
    finally:
        page.close()


def test_budget_tuner_renders_in_jupyterlab(lab, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        _run_all(page, lab, "06_budget_tuning.ipynb", _code_cells("06_budget_tuning.ipynb"))
        tuner = page.locator(f"{FRONT} .overlay-budget")
        assert tuner.count() == 1
        assert tuner.locator("svg").count() >= 1 and "resident tokens" in tuner.inner_text()
        _shot(tuner, "budget_tuner.png", publish="budget_tuner.png")
        # four quick key presses: the readout, the totals line and the chart all end at the same ceiling
        tuner.locator(".noUi-handle").first.click()
        for key in ("ArrowLeft", "End", "ArrowLeft", "ArrowLeft"):
            page.keyboard.press(key)
        expected = f"{32768 - 2 * 256:,}"
        page.wait_for_function(
            """([sel, want]) => { const t = document.querySelector(sel);
            return t && t.innerText.includes(`under ceiling ${want}`) && t.innerHTML.includes(`at ceiling ${want}`); }""",
            arg=[f"{FRONT} .overlay-budget", expected],
            timeout=60_000,
        )
        assert tuner.locator(".widget-readout").first.inner_text().replace(",", "") == expected.replace(",", "")
    finally:
        page.close()


# ------------------------------------------------------------------ opened as stored; the report offline

CHART = ".vega-embed :is(canvas, svg), .jp-OutputArea-output[data-mime-type='image/png'] img"  # drawn, either form
SNAPSHOT = ".overlay-snapshot"  # a panel's static fallback (text/html), shown where no widget can be
RUN_NOTE = ".overlay-run-note"  # a live panel's note, shown where ipywidgets marks it disconnected
VEGALITE = "application/vnd.vegalite.v5+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET = f"{FRONT} .jp-OutputArea-output .overlay-budget .widget-slider"  # the tuner, drawn from the stored state


def _stored_forms(name: str) -> tuple[int, int]:
    """(charts, widgets) among a stored notebook's outputs."""
    nb = json.loads((ROOT / "notebooks" / name).read_text())
    outs = [o.get("data", {}) for c in nb["cells"] for o in c.get("outputs", ())]
    return sum(VEGALITE in d for d in outs), sum(WIDGET_VIEW in d and "text/html" in d for d in outs)


def _open(page, lab, path: str) -> None:
    """Open a notebook as stored and wait for its kernel (which is when JupyterLab writes kernel metadata)."""
    page.goto(f"{lab['base']}/lab/tree/{path}?token={lab['token']}&reset")
    page.wait_for_selector(f"{FRONT} .jp-OutputArea-output", timeout=90_000)
    page.wait_for_function(
        r"() => [...document.querySelectorAll('.jp-StatusBar-TextItem')]"
        r".some(e => /\| Idle/.test(e.textContent))",
        timeout=120_000,
    )


def _shutdown_kernels(lab) -> None:
    with urllib.request.urlopen(f"{lab['base']}/api/sessions?token={lab['token']}", timeout=10) as r:
        sessions = json.load(r)
    for s in sessions:
        req = urllib.request.Request(f"{lab['base']}/api/sessions/{s['id']}?token={lab['token']}", method="DELETE")
        urllib.request.urlopen(req, timeout=30).close()


NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_stored_notebook_renders_untrusted_and_opening_it_changes_nothing(lab, browser, name):
    """Opened as anyone else would (this JupyterLab never trusted it): every stored chart is drawn (Vega-Lite,
    or its PNG), every stored panel shows its static snapshot, no `alt.Chart(` or `VBox(` text stands in for
    either; once its kernel is up the notebook is not marked modified, and saving it rewrites no byte."""
    charts, panels = _stored_forms(name)
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    try:
        _open(page, lab, f"notebooks/{name}")
        if charts:
            page.wait_for_function(
                f"n => document.querySelectorAll(`{FRONT} :is({CHART})`).length >= n", arg=charts, timeout=60_000
            )
        front = page.locator(FRONT)
        assert front.locator(SNAPSHOT).count() == panels
        assert all("interactive only when this cell runs" in t for t in front.locator(SNAPSHOT).all_inner_texts())
        text = "\n".join(front.locator(".jp-OutputArea-output").all_inner_texts())
        assert "alt.Chart(" not in text and "LayerChart(" not in text and "VBox(" not in text
        assert page.locator(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty").count() == 0, "opened as modified"
        assert _disconnected_icons(page) == [], "an untrusted stored view draws ipywidgets' disconnected icon"
        before = (lab["home"] / "notebooks" / name).read_bytes()
        page.keyboard.press("Control+s")
        page.wait_for_timeout(2000)
        assert (lab["home"] / "notebooks" / name).read_bytes() == before, "saving unchanged rewrote the file"
        if panels:
            _shot(front.locator(SNAPSHOT).first, f"untrusted_snapshot_{Path(name).stem}.png")
    finally:
        page.close()
        _shutdown_kernels(lab)


def test_stored_notebook_opens_live_after_make_trust_and_says_run_this_cell(lab, browser):
    """`make lab` signs the notebooks (`make trust`); the tuner is then drawn from the stored widget state, with
    its note "run this cell to use it" and its controls dimmed (no kernel holds it). The same notebook unsigned
    (one byte of metadata changed) shows the tuner's static snapshot instead: the control."""
    stored = lab["home"] / "stored"
    stored.mkdir()
    nb = json.loads((ROOT / "notebooks" / "06_budget_tuning.ipynb").read_text())
    (stored / "06_budget_tuning.ipynb").write_text(json.dumps(nb, indent=1))
    nb["metadata"]["untrusted_copy"] = True
    (stored / "unsigned.ipynb").write_text(json.dumps(nb, indent=1))
    subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-o",
            f"{sys.prefix}/.installed",
            "trust",
            f"VENV={sys.prefix}",
            f"NOTEBOOKS={stored / '06_budget_tuning.ipynb'}",
        ],
        cwd=ROOT,
        env=lab["env"],
        check=True,
    )
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    try:
        _open(page, lab, "stored/06_budget_tuning.ipynb")
        page.wait_for_selector(WIDGET, timeout=90_000)
        tuner = page.locator(f"{FRONT} .jp-OutputArea-output .overlay-budget").first
        assert tuner.locator("svg").count() >= 1 and "resident tokens" in tuner.inner_text()
        note = tuner.locator(RUN_NOTE)
        assert note.is_visible() and "run this cell to use it" in note.inner_text()
        assert tuner.locator("button").first.evaluate("b => getComputedStyle(b).pointerEvents") == "none"
        assert page.locator(f"{FRONT} {SNAPSHOT}").count() == 0
        _shot(tuner, "stored_tuner_trusted.png")
        _open(page, lab, "stored/unsigned.ipynb")
        page.wait_for_selector(f"{FRONT} {SNAPSHOT}", timeout=90_000)
        assert (
            page.locator(WIDGET).count() == 0 and "resident tokens" in page.locator(f"{FRONT} {SNAPSHOT}").inner_text()
        )
    finally:
        page.close()
        _shutdown_kernels(lab)


# Each element that ipywidgets marks disconnected and whose `::before` draws something: its red broken-chain icon.
ICONS = """root => [...document.querySelectorAll(`${root} .jupyter-widgets-disconnected`)]
    .filter(e => { const b = getComputedStyle(e, '::before');
                   return b.display !== 'none' && !['none', 'normal', ''].includes(b.content); })
    .map(e => e.className)"""
WIDGET_VIEWS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb") if WIDGET_VIEW in p.read_text())


def _disconnected_icons(page, root: str = FRONT, wait_ms: int = 0) -> list[str]:
    """The icons drawn under `root`; with `wait_ms`, once none is left or the time is up (a panel's style comes
    with its run note, drawn a moment after the panel itself)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    if wait_ms:
        try:
            page.wait_for_function(f"root => ({ICONS})(root).length === 0", arg=root, timeout=wait_ms)
        except PlaywrightTimeout:
            pass
    return page.evaluate(ICONS, root)


def _open_trusted(page, lab, name: str) -> int:
    """A copy of a stored notebook, signed as `make trust` signs it, opened in the lab; its stored widget views
    drawn (every one marked disconnected: no kernel holds them). Returns how many views it stores."""
    trusted = lab["home"] / "trusted"
    trusted.mkdir(exist_ok=True)
    shutil.copy(ROOT / "notebooks" / name, trusted / name)
    subprocess.run(
        [sys.executable, "-m", "jupyter", "trust", str(trusted / name)], env=lab["env"], check=True, capture_output=True
    )
    views = sum(
        WIDGET_VIEW in o.get("data", {})
        for c in json.loads((trusted / name).read_text())["cells"]
        for o in c.get("outputs", ())
    )
    _open(page, lab, f"trusted/{name}")
    page.wait_for_function(
        f"n => document.querySelectorAll(`{FRONT} .jp-OutputArea-output .jupyter-widgets-disconnected`).length >= n",
        arg=views,
        timeout=90_000,
    )
    return views


@pytest.mark.parametrize("name", WIDGET_VIEWS)
def test_a_trusted_stored_notebook_draws_no_disconnected_icon_and_says_stored_view(lab, browser, name):
    """Trusted (`make lab` runs `make trust`), every stored widget view is drawn from the notebook's widget state
    with no kernel behind it, and ipywidgets marks each view in it `jupyter-widgets-disconnected`, whose
    `::before` is a red broken-chain icon. None is drawn: each panel says once, in words, that it is a stored view
    (its run note), and a stored progress bar is a plain picture of what it finished. The control: an element
    outside a panel or a stored bar with the same class does draw the icon in this page."""
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    try:
        _open_trusted(page, lab, name)
        front = page.locator(FRONT)
        marked = front.locator(".jupyter-widgets-disconnected").count()
        assert _disconnected_icons(page, wait_ms=30_000) == [], f"{name}: {marked} views marked, some draw the icon"
        panels = front.locator(".jp-OutputArea-output .overlay-panel")
        for i in range(panels.count()):
            note = panels.nth(i).locator(RUN_NOTE).first
            note.wait_for(state="visible", timeout=30_000)
            assert "Stored view: run this cell to use it" in note.inner_text()
        control = page.evaluate(
            f"""() => {{ const e = document.createElement('div'); e.className = 'jupyter-widgets-disconnected';
            document.querySelector('{FRONT} .jp-Cell').appendChild(e);
            const b = getComputedStyle(e, '::before'); const seen = [b.content, b.display, b.color]; e.remove();
            return seen; }}"""
        )
        assert control[1] != "none" and control[0] not in ("none", "normal"), control  # ipywidgets' icon is loaded
        if panels.count():
            _shot(panels.first, f"stored_trusted_{Path(name).stem}.png")
    finally:
        page.close()
        _shutdown_kernels(lab)


def test_the_trusted_stored_quickstart_shows_the_lesson_to_review_at_its_review_cell(lab, browser):
    """00's review cell, opened as stored and trusted, shows what the notebook asks you to review — the pending
    lesson, the diff it would make, Approve — and the approving cell shows the approval in a panel of its own."""
    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    try:
        _open_trusted(page, lab, "00_quickstart.ipynb")
        panels = page.locator(f"{FRONT} .jp-OutputArea-output .overlay-review")
        assert panels.count() == 2
        review, after = panels.first.inner_text(), panels.last.inner_text()
        assert "Pending (1)" in review and "Keep replies to two sentences." in review and "with it" in review
        assert panels.first.get_by_role("button", name="Approve").count() == 1 and "Active (" not in review
        assert "is now active" not in review and ": done" not in review
        assert "Pending (0)" in after and "Active (1)" in after and "is now active" in after
        assert panels.last.get_by_role("button", name="Approve").count() == 0
        _shot(panels.first, "stored_quickstart_review.png")
    finally:
        page.close()
        _shutdown_kernels(lab)


def test_a_trusted_session_shows_a_tooltip_on_04s_chart(lab, browser):
    """Charts are interactive Vega-Lite where the front end draws it: hovering the recall curves of 04 shows a
    tooltip naming the gate and its recall."""
    subprocess.run(
        [sys.executable, "-m", "jupyter", "trust", str(lab["home"] / "notebooks" / "04_tau_thresholds.ipynb")],
        env=lab["env"],
        check=True,
        capture_output=True,
    )
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    try:
        _open(page, lab, "notebooks/04_tau_thresholds.ipynb")
        canvas = page.locator(f"{FRONT} .vega-embed :is(canvas, svg)").first
        canvas.wait_for(timeout=60_000)
        canvas.scroll_into_view_if_needed()
        box = canvas.bounding_box()
        tip = page.locator("#vg-tooltip-element")
        found = ""
        for fx in (0.2, 0.3, 0.4, 0.5):  # sweep down a few columns of the first panel until a mark answers
            for y in range(int(box["y"]), int(box["y"] + box["height"]), 2):
                page.mouse.move(box["x"] + box["width"] * fx / 2, y)
                if tip.count() and tip.first.is_visible():
                    found = tip.first.inner_text()
                    break
            if found:
                break
        assert "recall" in found and "gate" in found, found
        _shot(page.locator(f"{FRONT} .vega-embed").first, "tooltip_04.png")
    finally:
        page.close()
        _shutdown_kernels(lab)


def test_report_html_renders_widgets_with_the_network_blocked(browser, tmp_path):
    """`make report`'s exporter: the widget manager is a file beside the HTML; every non-file request fails."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "overlay_widgets.report",
            "--output-dir",
            str(tmp_path),
            str(ROOT / "notebooks" / "06_budget_tuning.ipynb"),
        ],
        check=True,
        cwd=ROOT,
    )
    html = tmp_path / "06_budget_tuning.html"
    blocked, loaded = [], []
    context = browser.new_context(viewport={"width": 1400, "height": 1400})
    context.route(
        "**/*",
        lambda route: (
            (loaded.append(route.request.url), route.continue_())
            if route.request.url.startswith("file:")
            else (blocked.append(route.request.url), route.abort())
        ),
    )
    page = context.new_page()
    try:
        page.goto(html.as_uri())
        page.wait_for_selector(".overlay-budget .widget-slider", timeout=60_000)
        tuner = page.locator(".overlay-budget").first
        assert "resident tokens" in tuner.inner_text() and tuner.locator("svg").count() >= 1
        assert any(u.endswith("_static/html-manager/embed.js") for u in loaded), loaded
        assert not blocked, blocked  # no CDN: not the widget manager, not require.js, not MathJax
        # no kernel behind an exported page: its controls say so and are dimmed rather than look live
        assert tuner.locator(RUN_NOTE).is_visible() and "run this cell" in tuner.locator(RUN_NOTE).inner_text()
        assert tuner.locator("button").first.evaluate("b => getComputedStyle(b).pointerEvents") == "none"
        assert page.locator(".jupyter-widgets-disconnected").count()
        assert _disconnected_icons(page, "body", wait_ms=30_000) == []
        stored = json.loads((ROOT / "notebooks" / "06_budget_tuning.ipynb").read_text(encoding="utf-8"))
        charts = sum(
            "application/vnd.vegalite.v5+json" in o.get("data", {})
            for c in stored["cells"]
            for o in c.get("outputs", [])
        )
        pngs = page.locator(".jp-OutputArea-output img[src^='data:image/png']").count()
        assert charts >= 1 and pngs == charts  # every chart as its PNG
        _shot(tuner, "report_offline_tuner.png")
    finally:
        context.close()


WIDE_TABLE = "[...document.querySelectorAll('table.dataframe')].find(t => t.querySelectorAll('thead th').length > 30)"


def test_report_pages_write_widgets_in_the_ui_font_and_scroll_a_wide_table_inside_its_output(browser, tmp_path):
    """`report.PAGE_CSS`: a widget's text in JupyterLab's UI font, not the browser's default serif (00's review
    panel); 05's 32-column table scrolls inside its output area, the page itself never sideways, on a wide window
    and on one under 760 px (where nbconvert's layout made the output a table row that cannot scroll: the table was
    cut off at the page's edge)."""
    names = ["00_quickstart", "05_rebase_orphan_rates"]
    subprocess.run(
        [sys.executable, "-m", "overlay_widgets.report", "--output-dir", str(tmp_path)]
        + [str(ROOT / "notebooks" / f"{n}.ipynb") for n in names],
        check=True,
        cwd=ROOT,
    )
    for width in (1400, 700):
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        try:
            page.goto((tmp_path / "00_quickstart.html").as_uri())
            page.wait_for_selector(".overlay-panel .widget-html-content b", timeout=60_000)
            fonts = page.evaluate(
                "() => ['.overlay-panel .widget-html-content', '.overlay-panel .overlay-run-note', "
                "'.overlay-panel button'].map(s => getComputedStyle(document.querySelector(s)).fontFamily)"
            )
            assert all("sans-serif" in f and "Times" not in f for f in fonts), fonts

            page.goto((tmp_path / "05_rebase_orphan_rates.html").as_uri())
            page.wait_for_selector("table.dataframe")
            sizes = page.evaluate(
                f"""() => {{
                    const table = {WIDE_TABLE}, out = table.closest('.jp-OutputArea-output');
                    const before = [out.scrollWidth, out.clientWidth];
                    out.scrollLeft = out.scrollWidth;
                    return {{page: document.scrollingElement.scrollWidth, view: window.innerWidth,
                             content: before[0], box: before[1], scrolled: out.scrollLeft,
                             tableRight: table.getBoundingClientRect().right,
                             boxRight: out.getBoundingClientRect().right}};
                }}"""
            )
            assert sizes["page"] <= sizes["view"], sizes  # the page does not scroll sideways
            assert sizes["content"] > sizes["box"] and sizes["scrolled"] > 0, sizes  # the output area does
            assert sizes["tableRight"] <= sizes["boxRight"] + 1, sizes  # to the table's last column
            _shot(page.locator(".jp-OutputArea-output:has(thead th:nth-child(30))").first, f"report_05_{width}.png")
        finally:
            context.close()


# ------------------------------------------------------------------ make lab: running a notebook leaves it alone

DOCMANAGER = "@jupyterlab/docmanager-extension:plugin"


def test_make_lab_opens_jupyterlab_with_document_autosave_off(browser, tmp_path):
    """`make lab` installs binder/overrides.json as this environment's JupyterLab defaults: document autosave is
    off, so running 00 and waiting leaves notebooks/00_quickstart.ipynb as stored in git. Started exactly as a
    user starts it (`make lab`, plus LAB_ARGS for a free port, a token and no browser) with empty user settings,
    so what the settings API reports is the lab's default, not a user's choice."""
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),  # `make trust`'s signatures
    }
    args = f"--no-browser --ServerApp.port={port} --ServerApp.port_retries=0 --IdentityProvider.token={token}"
    cmd = ["make", "--no-print-directory", "-o", f"{sys.prefix}/.installed", "lab", f"VENV={sys.prefix}"]
    log = open(tmp_path / "make_lab.log", "w")
    proc = subprocess.Popen([*cmd, f"LAB_ARGS={args}"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"

    def docmanager() -> dict:
        with urllib.request.urlopen(f"{base}/lab/api/settings/{DOCMANAGER}?token={token}", timeout=5) as r:
            return json.load(r)

    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                settings = docmanager()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail(f"make lab did not start:\n{(tmp_path / 'make_lab.log').read_text()[-3000:]}")
                time.sleep(0.5)
        # the server sends the schema with the lab's defaults and the user's settings; the page composes the two
        assert settings["schema"]["properties"]["autosave"]["default"] is False  # JupyterLab's own default is true
        assert "autosave" not in (settings.get("settings") or {}), "a user setting, not the lab's default"
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:  # what the user sees: Settings → Autosave Documents, unticked, with 00 open
            page.goto(f"{base}/lab/tree/notebooks/00_quickstart.ipynb?token={token}&reset")
            page.wait_for_selector(f"{FRONT} .jp-Cell", timeout=90_000)
            page.locator(".lm-MenuBar-item", has_text="Settings").first.click()
            item = page.locator(".lm-Menu-item:visible", has_text="Autosave Documents").first
            item.wait_for(timeout=30_000)
            assert "lm-mod-toggled" not in item.get_attribute("class"), "autosave is on"
            item.click()  # the control works: the click saves the user's own choice (a scratch settings folder)
            deadline = time.monotonic() + 30
            while (docmanager().get("settings") or {}).get("autosave") is not True:
                assert time.monotonic() < deadline, "clicking Autosave Documents saved no user setting"
                time.sleep(0.5)
        finally:
            page.close()
    finally:
        try:
            urllib.request.urlopen(
                urllib.request.Request(f"{base}/api/shutdown?token={token}", method="POST"), timeout=5
            )
            proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            proc.terminate()
            proc.wait(timeout=30)
        log.close()


def test_binder_installs_the_same_lab_defaults(tmp_path):
    """Binder's postBuild installs binder/overrides.json where JupyterLab reads packages' defaults, as `make lab`
    does (here into a scratch JupyterLab application directory)."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "JUPYTERLAB_DIR": str(tmp_path / "lab"),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),  # `jupyter trust`'s signatures
    }
    subprocess.run([str(ROOT / "binder" / "postBuild")], cwd=ROOT, env=env, check=True, capture_output=True)
    installed = tmp_path / "lab" / "settings" / "overrides.d" / "overlay-kit.json"
    assert json.loads(installed.read_text()) == json.loads((ROOT / "binder" / "overrides.json").read_text())
    assert json.loads(installed.read_text())[DOCMANAGER] == {"autosave": False}
