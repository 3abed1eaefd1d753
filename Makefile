# Every target creates or reuses .venv itself. TORCH_SPEC is installed before the package so that
# sentence-transformers never pulls a CUDA build of torch.
PYTHON      ?= python3
VENV        ?= .venv
TORCH_SPEC  ?= torch==2.13.0
EXTRAS      ?= dev,dask
BIN         := $(VENV)/bin
STAMP       := $(VENV)/.installed
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: lab test report bench venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP)

lab: venv
	$(BIN)/jupyter lab notebooks/00_quickstart.ipynb

test: venv
	$(BIN)/python -m pytest -q -p no:cacheprovider tests
	$(BIN)/python -m pytest -q -p no:cacheprovider --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg notebooks

report: venv
	mkdir -p build
	FULL=1 $(BIN)/jupyter nbconvert --to html --execute --output-dir build notebooks/*.ipynb

bench: venv
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf build .pytest_cache
