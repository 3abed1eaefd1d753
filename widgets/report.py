"""`make report`: notebooks → HTML whose widgets render with no network.

nbconvert's HTML loads require.js and the widget manager from CDNs, so offline every widget is dropped. Here
the widget manager (`@jupyter-widgets/html-manager`'s `embed.js`, vendored in `html-manager/`) is
copied beside the HTML and referenced by a relative URL, require.js is left out (`embed.js` needs none), and
the widgets render from the state stored in each notebook. MathJax and Mermaid (CDN scripts too) are left out:
no notebook has LaTeX math or a Mermaid diagram. One progress line per notebook, with its duration, and a total.

    python -m overlay_widgets.report --output-dir build notebooks/*.ipynb             # the stored outputs
    FULL=1 python -m overlay_widgets.report --execute --output-dir build notebooks/*.ipynb   # re-run first
    python -m overlay_widgets.report --store notebooks/*.ipynb    # re-run and store in place (`make notebooks`)
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import sys
import time
from pathlib import Path

from .panel import QUIET, QUIET_CSS

STATIC = Path(__file__).with_name("html-manager")
ASSETS = "_static/html-manager"  # relative to the HTML files
# What JupyterLab's own stylesheets give a notebook and nbconvert's lab template does not, after its CSS:
# - the UI font. ipywidgets' CSS sets sizes (`--jp-widgets-font-size`) but no font family (there is no
#   `--jp-widgets-font-family`): a widget inherits JupyterLab's `.jp-ThemedContainer {font-family:
#   var(--jp-ui-font-family)}` on the shell, and a button gets it from `:where(.jp-ThemedContainer) button` (a
#   Font Awesome `.fa` keeps its glyphs). The lab template defines the variable and sets no page font, so every
#   widget's text was the browser's default serif (Times New Roman in Chromium), its buttons the UA's font.
# - JupyterLab's on-screen output layout: a flex row of prompt and output, the output a block that scrolls what
#   is wider than it (05's 32-column table). The template lays outputs out as a table, as JupyterLab only prints
#   them: the output is a table cell (Chromium scrolls one; a table cell is a fragile scroll container), and under
#   760 px wide (a phone, a half-screen window, a page zoomed to 200 %) a table row, which cannot scroll, inside an
#   `overflow: hidden` box: the wide table was cut off at the page's edge, its other columns out of reach. A flex
#   item's table display computes to block. Printing keeps the template's layout.
PAGE_CSS = """
body, button { font-family: var(--jp-ui-font-family); }
@media screen {
  .jp-OutputArea-child { display: flex; flex-direction: row; }
  .jp-OutputArea-child > .jp-OutputArea-prompt { flex: 0 0 var(--jp-cell-prompt-width); }
  .jp-OutputArea-child > .jp-OutputArea-output { flex: 1 1 auto; width: auto; min-width: 0; overflow-x: auto; }
}
@media only screen and (max-width: 760px) {
  .jp-OutputArea-child { flex-direction: column; }
  .jp-OutputArea-child > .jp-OutputArea-prompt { flex: 0 0 auto; }
}
"""
# nbconvert's lab template without its two CDN scripts (MathJax and Mermaid), with `PAGE_CSS` after its CSS.
OFFLINE = (
    "{%- extends 'lab/index.html.j2' -%}"
    "{%- block html_head_js_mathjax -%}{%- endblock -%}{%- block html_head_js_mermaidjs -%}{%- endblock -%}"
    '{%- block html_head_css -%}<style type="text/css">{% raw %}' + PAGE_CSS + "{% endraw %}</style>{%- endblock -%}"
)


def browser_numbers(node):
    """A notebook's JSON with every integral float as an int, as JupyterLab writes it back (JavaScript has one
    number type): a stored notebook saved unchanged in JupyterLab then keeps every byte."""
    if isinstance(node, float) and node.is_integer():
        return int(node)
    if isinstance(node, list):
        return [browser_numbers(v) for v in node]
    if isinstance(node, dict):
        return type(node)((k, browser_numbers(v)) for k, v in node.items())
    return node


_BAR = re.compile(r"\d+%\|")
STORED_BAR = QUIET[1]  # the class a stored bar gets: its widget tree draws no disconnected icon
_QUIET_STYLE = f"<style>{QUIET_CSS}</style>"


def _stored_bars(nb):
    """(output data, the bar's HBox state, its three parts' states, its progress part) per stored tqdm bar."""
    state = nb.get("metadata", {}).get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    models = state.get("state", {})

    def model(ref):
        return models.get(str(ref).removeprefix("IPY_MODEL_"), {}).get("state", {})

    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            data = out.get("data", {})
            view, text = data.get("application/vnd.jupyter.widget-view+json"), "".join(data.get("text/plain", ""))
            if not view or not _BAR.search(text):
                continue
            box = model(view.get("model_id"))
            parts = [model(c) for c in box.get("children", [])]
            bars = [p for p in parts if "max" in p and "value" in p and isinstance(p.get("value"), (int, float))]
            if len(parts) == 3 and len(bars) == 1 and bars[0].get("max"):
                yield data, box, parts, bars[0]


def finished_bars(nb):
    """The notebook with each stored tqdm bar's plain-text form written from its widget's final state
    ("histories: 100%|██████████| 16/16 [00:02<00:00, 12.90it/s]"), not the "0%" it had when it was first drawn:
    what an untrusted JupyterLab, GitHub and nbviewer show. A bar whose widget state is not stored is left as is."""
    for data, _, (left, _, right), bar in _stored_bars(nb):
        done = max(0, min(10, int(10 * bar["value"] / bar["max"])))
        left, right = (
            html.unescape(str(p.get("value", "")).removeprefix(_QUIET_STYLE)).replace("\u2007", " ")
            for p in (left, right)
        )
        data["text/plain"] = f"{left}|{'█' * done}{' ' * (10 - done)}|{right}"
    return nb


def quiet_bars(nb):
    """The notebook with each stored tqdm bar drawn, from its stored state, without ipywidgets' red "disconnected"
    icon: the bar gets the class `overlay-stored-bar` and its left label the style that hides the icon in that
    tree (`panel.QUIET_CSS`). A stored bar is a picture of what a finished sweep did; nothing there reconnects.
    Applying it twice changes nothing."""
    for _, box, (left, _, _), _ in _stored_bars(nb):
        classes = box.setdefault("_dom_classes", [])
        if STORED_BAR not in classes:
            classes.append(STORED_BAR)
        if not str(left.get("value", "")).startswith(_QUIET_STYLE):
            left["value"] = _QUIET_STYLE + str(left.get("value", ""))
    return nb


def executed(notebook: Path, timeout: int | None = None):
    """The notebook run top to bottom in its own folder, its widgets' state stored, its progress bars' text showing
    what they finished (and their stored views quiet), its numbers as a browser writes them."""
    import nbformat
    from nbconvert.preprocessors import ExecutePreprocessor

    nb = nbformat.read(notebook, as_version=4)
    ExecutePreprocessor(timeout=timeout, store_widget_state=True).preprocess(
        nb, {"metadata": {"path": str(notebook.parent)}}
    )
    return browser_numbers(quiet_bars(finished_bars(nb)))


def store(notebook: str | Path, timeout: int | None = None) -> Path:
    """Re-run a notebook and write it back in place: how every notebook under notebooks/ is stored."""
    import nbformat

    nbformat.write(executed(Path(notebook), timeout), notebook)
    return Path(notebook)


def export(notebook: str | Path, out_dir: str | Path, *, execute: bool = False, timeout: int | None = None) -> Path:
    """Write `out_dir/<name>.html` (and the widget manager beside it); return the HTML path."""
    import nbformat
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    notebook, out_dir = Path(notebook), Path(out_dir)
    nb = executed(notebook, timeout) if execute else nbformat.read(notebook, as_version=4)
    exporter = HTMLExporter(
        template_name="lab",
        template_file="offline.html.j2",
        require_js_url="",
        extra_loaders=[DictLoader({"offline.html.j2": OFFLINE})],
        widget_renderer_url=f"{ASSETS}/embed.js",
    )
    html, _ = exporter.from_notebook_node(nb, {"metadata": {"name": notebook.stem}})
    (out_dir / ASSETS).mkdir(parents=True, exist_ok=True)
    for f in ("embed.js", "LICENSE"):
        shutil.copyfile(STATIC / f, out_dir / ASSETS / f)
    target = out_dir / f"{notebook.stem}.html"
    target.write_text(html, encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m overlay_widgets.report", description=__doc__.splitlines()[0])
    p.add_argument("notebooks", nargs="+", metavar="NOTEBOOK")
    p.add_argument("--output-dir", default="build", metavar="DIR")
    p.add_argument("--execute", action="store_true", help="run each notebook first (its own directory as cwd)")
    p.add_argument(
        "--store",
        action="store_true",
        help="no HTML: re-run each notebook and write it back in place "
        "(`make notebooks`: how the stored notebooks that nbval compares are made)",
    )
    args = p.parse_args(argv)
    start = time.perf_counter()
    for i, nb in enumerate(args.notebooks, 1):
        print(f"[{i}/{len(args.notebooks)}] {Path(nb).name} …", end=" ", flush=True)
        t0 = time.perf_counter()
        target = store(nb) if args.store else export(nb, args.output_dir, execute=args.execute)
        print(f"{time.perf_counter() - t0:.1f} s → {target}", flush=True)
    print(f"{len(args.notebooks)} notebooks in {time.perf_counter() - start:.1f} s", flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
