# Every target creates or reuses .venv itself. TORCH_SPEC is installed before the package so that
# sentence-transformers never pulls a CUDA build of torch.
PYTHON      ?= python3
VENV        ?= .venv
TORCH_SPEC  ?= torch==2.13.0
EXTRAS      ?= dev,dask
# The local inference engine (llama.cpp) for the model client's tests, the cost study and its benchmark.
# Built from source once per machine (~5 min on 2 cores); pip caches the wheel, so later installs take seconds.
ENGINE_SPEC ?= llama-cpp-python[server]==0.3.36
BIN         := $(VENV)/bin
STAMP       := $(VENV)/.installed
ENGINE_STAMP := $(VENV)/.engine-$(shell echo '$(ENGINE_SPEC)' | cksum | cut -d' ' -f1)
# Debian's chromium for the browser test (Playwright drives it; no browser download). Installed once, when root.
CHROMIUM    ?= /usr/bin/chromium
CHROMIUM_STAMP := $(VENV)/.chromium
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: lab test report bench venv engine browser clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP)

engine: $(ENGINE_STAMP)

$(ENGINE_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet "$(ENGINE_SPEC)"
	touch $(ENGINE_STAMP)

browser: $(CHROMIUM_STAMP)

$(CHROMIUM_STAMP): $(STAMP)
	@if [ ! -x $(CHROMIUM) ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; fi
	@if [ -x $(CHROMIUM) ]; then touch $@; else echo "!!! $(CHROMIUM) is missing and this is not root:" \
		"tests/test_browser.py will be SKIPPED (install Debian's chromium, or run make test as root)"; fi

lab: venv
	JUPYTER_PREFER_ENV_PATH=1 $(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 \
		$(if $(filter 0,$(shell id -u)),--allow-root) notebooks/00_quickstart.ipynb

test: venv engine browser
	OVERLAY_KIT_REQUIRE_ENGINE=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests
	$(BIN)/python -m pytest -q -p no:cacheprovider --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg notebooks

report: venv engine
	mkdir -p build
	FULL=1 $(BIN)/jupyter nbconvert --to html --execute --output-dir build notebooks/*.ipynb

bench: venv engine
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf build .pytest_cache
