# One entry point for humans and CI.
#   make run    set up the environment and run the main job (streaming word count on local Spark)
#   make test   set up, build the JVM pieces, lint, type-check and run the whole test suite
#   make traffic  the traffic-estimation app (online EM, apps/traffic) on a generated city
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup shim minicluster run traffic lint test test-fast bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml requirements.lock
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip==23.2.1
	$(PY) -m pip install --quiet -c requirements.lock -e '.[test,apps]'
	touch $(STAMP)

shim: setup
	PY=$(PY) bash jvm-shim/build.sh

minicluster: setup
	bash jvm-shim/minicluster/build.sh

run: shim
	$(PY) apps/wordcount.py --source rate --rate 2000 --seconds 20

# A synthetic city (3024 links, 10 past days) generated once, then a minute of online EM,
# lighter than the paper's settings (300 samples, 2 iterations) so that 2 cores keep up.
TRAFFIC_DATA ?= /tmp/dstream-traffic-data
TRAFFIC_ARGS ?= --seconds 60 --samples 100 --chains 20 --iterations 1

$(TRAFFIC_DATA)/city.json: | setup
	PYTHONPATH=apps $(PY) -m traffic.generate --out $(TRAFFIC_DATA)

traffic: shim $(TRAFFIC_DATA)/city.json
	$(PY) apps/traffic_em.py --data $(TRAFFIC_DATA) $(TRAFFIC_ARGS)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: shim minicluster lint
	$(PY) -m pytest -q

test-fast: setup
	$(PY) -m pytest -q tests/unit

clean:
	rm -rf $(VENV) jvm-shim/*/target
