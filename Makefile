# Two commands for a newcomer: `make demo` and `make test`. Both set everything up first.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
export DAGSTER_HOME ?= $(CURDIR)/data/dagster_home

.PHONY: install autogen demo test lint browser postgres node ui bench clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	@echo "Installing the project and its dependencies into $(VENV): a few minutes the first time, then never again."
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --progress-bar on -c constraints.txt -e '.[dev]'
	touch $@

# The tests' AutoGen producer gets a venv of its own: autogen-core pins protobuf~=5.29, Dagster's gRPC needs protobuf>=6.
AUTOGEN_VENV ?= .venv-autogen
AUTOGEN_PACKAGES := autogen-agentchat==0.7.5 autogen-core==0.7.5 autogen-ext==0.7.5

autogen: $(AUTOGEN_VENV)/.installed

$(AUTOGEN_VENV)/.installed: constraints-autogen.txt
	test -x $(AUTOGEN_VENV)/bin/python || $(PYTHON) -m venv $(AUTOGEN_VENV)
	$(AUTOGEN_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(AUTOGEN_VENV)/bin/python -m pip install --quiet -c constraints-autogen.txt $(AUTOGEN_PACKAGES)
	touch $@

demo: install
	$(BIN)/eval-pipeline demo

test: install autogen lint browser postgres node
	$(BIN)/python -m pytest -q -n auto --durations=25

# The UI test opens the asset graph in headless Chromium; install Debian's when missing and we can.
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1; } \
		|| echo "chromium is not installed: the browser check will be skipped"

# The users'-files tests run JavaScript writers as teams run them; install Debian's Node.js when missing and we can.
node:
	@command -v node >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs) >/dev/null 2>&1; } \
		|| echo "Node.js is not installed: the JavaScript writers' test will be skipped"

# The instance-storage tests start a throwaway server of their own from Debian's postgresql (these machines have
# it); install it when missing and we can.
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >/dev/null 2>&1; } \
		|| echo "PostgreSQL is not installed: the Postgres instance-storage tests will be skipped"

# mypy checks the core: the packages [tool.mypy] lists in pyproject.toml.
lint: install
	$(BIN)/ruff check eval_pipeline eval_pipeline_tests benchmarks
	$(BIN)/ruff format --check eval_pipeline eval_pipeline_tests benchmarks
	$(BIN)/mypy

ui: install
	$(BIN)/eval-pipeline ui

# Days of 20k and 100k episodes (and 20k of 20,000 distinct tasks, of 2,000 agents) against the DuckDB floor; `make bench BENCH_ARGS=--million`
# adds a day of 1M (minutes).
bench: install
	$(BIN)/python benchmarks/run_throughput.py $(BENCH_ARGS)

# Everything the demo and runs write under data/: the warehouse and what lives beside it (alert outbox and
# ledger, stored captures, the source's file index), reports, episodes and run history.
clean:
	rm -rf data/episodes data/eval.duckdb* data/reports data/dagster_home data/alerts data/captures \
		data/episode_source_index.json data/*.lock
