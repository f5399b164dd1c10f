# One entry point for humans and CI.
#   make run    set up the environment and run the main job (streaming word count on local Spark)
#   make test   set up, build the JVM pieces, lint, type-check and run the whole test suite
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup shim minicluster kafka run lint test test-fast bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml requirements.lock
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip==23.2.1
	$(PY) -m pip install --quiet -c requirements.lock -e '.[test,kafka]'
	touch $(STAMP)

shim: setup
	PY=$(PY) bash jvm-shim/build.sh

minicluster: setup
	bash jvm-shim/minicluster/build.sh

# Apache Kafka's broker jars (KRaft) for the Kafka tests; `bash jvm-shim/kafka/build.sh
# connector` adds Spark's Kafka source for bench/kafka.py.
kafka: setup
	bash jvm-shim/kafka/build.sh

run: shim
	$(PY) apps/wordcount.py --source rate --rate 2000 --seconds 20

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: shim minicluster kafka lint
	$(PY) -m pytest -q

test-fast: setup
	$(PY) -m pytest -q tests/unit

clean:
	rm -rf $(VENV) jvm-shim/*/target
