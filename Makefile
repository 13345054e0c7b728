# toolcage -- every target sets up what it needs by itself, on a fresh clone.
.DEFAULT_GOAL := help
SHELL := /bin/bash

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TESTS ?=
PYTEST_ARGS ?=

.PHONY: help install system-deps wasm test lint bench demo clean

help: ## show this help
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed ## create .venv and install toolcage with its dev tools

system-deps: ## install bubblewrap with apt-get when it is missing (as root)
	@command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] || { echo "bubblewrap is missing: run 'sudo make system-deps' (or apt-get install bubblewrap as root)" >&2; exit 1; }; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; }

wasm: $(VENV)/.installed ## build the WASI guest tools with the pinned zig (cache: ~/.cache/toolcage)
	$(BIN)/python -m toolcage.wasm_tools.build

test: install system-deps wasm ## set everything up and run the test suite
	$(BIN)/pytest $(if $(TESTS),-k "$(TESTS)") $(PYTEST_ARGS)

lint: install ## ruff, the import contracts ([tool.importlinter]) and mypy --strict
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@# mypy and lint-imports see the folders under their import names through a tree of links
	@mkdir -p .typecheck/toolcage
	@for pkg in runtime policies host_bindings sidecar wasm_tools; do ln -sfn ../../$$pkg .typecheck/toolcage/$$pkg; done
	PYTHONPATH=.typecheck $(BIN)/lint-imports --no-cache --no-logo
	$(BIN)/mypy -p toolcage.runtime -p toolcage.policies -p toolcage.host_bindings -p toolcage.sidecar -p toolcage.wasm_tools
	$(BIN)/mypy tests build_backend.py
	cd wasm_tools/python/guest && ../../../$(BIN)/mypy --config-file ../../../pyproject.toml --python-version 3.14 *.py
	cd wasm_tools/python/tool && MYPYPATH=../guest ../../../$(BIN)/mypy --config-file ../../../pyproject.toml --python-version 3.14 *.py

bench: install system-deps wasm ## measure the pipeline, the sandbox and the shell round trip
	$(BIN)/python tests/bench/run.py

demo: install system-deps wasm ## run toolcage's main job on the embedded default config
	$(BIN)/python -m toolcage.runtime.cli.demo

clean: ## remove the venv, caches and built guests
	rm -rf $(VENV) build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache
	find . -name __pycache__ -prune -exec rm -rf {} +
	find wasm_tools -name '*.wasm' -delete
