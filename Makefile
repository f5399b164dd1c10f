# One entry point for humans and CI.
#   make run    set up the environment and run the main job (streaming word count on local Spark)
#   make video  the video-analytics monitor on its event generator for a minute (apps/video_monitor.py)
#   make test   set up, build the JVM pieces, install Chromium (the Streaming tab's browser tests),
#               lint, type-check, build the docs site and run the test suite (what CI runs)
#   make docs   the documentation site into build/site (mkdocs, warnings are errors)
#   make dist   the release's sdist and wheel into dist/, checked (scripts/check_dist.py)
#   make test-fast  the pure-logic tests (no Spark), under a minute
#   make test-pythons  the fast tier and the clean-install smoke on Python 3.12 and 3.13
#   make fast-tier-newest  the fast tier on Python 3.13, the newest supported (make test runs it
#               as tests/integration/test_pythons.py)
#   make test-full  make test, then the long fault runs (tests marked `full`, and the
#               20-trial early-kill run)
#   make test-cpu  make test with each test's CPU time, its processes' included, into
#               build/suite-cpu.json (scripts/suite_cpu.py): where the suite's time goes
#   make peers  PyFlink and Bytewax in build/peers-venv for bench/peers (python -m bench.peers)
#   make traffic  the traffic-estimation app (online EM, apps/traffic) on a generated city
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# uv installs the locked set: it downloads in parallel and builds pyspark's wheel once into
# its cache (41 s on a machine without caches, where pip took 100 s and the clean install
# built it again). --compile-bytecode writes every installed module's .pyc once (13 s on 2
# cores): uv writes none by default, and with PYTHONDONTWRITEBYTECODE=1 (set on this kind of
# machine) every Python process the tests start (drivers, worker daemons, apps, pytest's
# workers) compiled pyspark, pandas and pyarrow from source again, 1.5 CPU-s of a bare
# driver's 7 (#60 item 11).
UV_VERSION := 0.13.9
UV     := $(VENV)/bin/uv

.PHONY: dist docs setup test-deps compile test-pythons fast-tier-newest shim executor-archive minicluster kafka browser run video traffic lint test test-fast test-full test-cpu clean-install-smoke bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml requirements.lock
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	$(UV) pip install --quiet --compile-bytecode --python $(PY) -c requirements.lock \
		-e '.[test,kafka,hdfs,docs]'
	touch $(STAMP)

shim: setup
	PY=$(PY) bash jvm-shim/build.sh

# The class-data-sharing archives local-cluster executors (~2 s less CPU each) and drivers of
# local masters (~1.5 s less to a first job) start from (jvm-shim/executor_archive.py);
# rebuilt only when the JVM or pyspark's jars change.
executor-archive: shim
	$(PY) jvm-shim/executor_archive.py

minicluster:
	bash jvm-shim/minicluster/build.sh

# Apache Kafka's broker jars (KRaft) for the Kafka tests; `bash jvm-shim/kafka/build.sh
# connector` adds Spark's Kafka source for bench/inputs/kafka.py.
kafka:
	bash jvm-shim/kafka/build.sh

# The peer engines of bench/peers (issue #62: PyFlink, Bytewax) in build/peers-venv, at the
# exact versions of bench/peers/requirements-peers.lock (their ranges conflict with ours), and
# Spark's Kafka connector for Structured Streaming's real-time mode.
.PHONY: peers
peers: setup kafka
	bash scripts/install-peers.sh
	bash jvm-shim/kafka/build.sh connector
	bash jvm-shim/kafka/build.sh flink

# Headless Chromium from Debian's packages, for tests/browser (quiet when already installed).
browser:
	bash scripts/ensure-chromium.sh

run: shim
	$(PY) apps/wordcount.py --source rate --rate 2000 --seconds 20

video: shim
	$(PY) apps/video_monitor.py --source generator --sessions 5000 --seconds 60

# A synthetic city (3024 links, 10 past days) generated once, then a minute of online EM,
# lighter than the paper's settings (300 samples, 2 iterations) so that 2 cores keep up.
TRAFFIC_DATA ?= /tmp/dstream-traffic-data
TRAFFIC_ARGS ?= --seconds 60 --samples 100 --chains 20 --iterations 1

$(TRAFFIC_DATA)/city.json: | setup
	PYTHONPATH=apps $(PY) -m traffic.generate --out $(TRAFFIC_DATA)

traffic: shim $(TRAFFIC_DATA)/city.json
	$(PY) apps/traffic_em.py --data $(TRAFFIC_DATA) $(TRAFFIC_ARGS)

# The documentation site (mkdocs.yml) into build/site; a warning (a broken link, a
# docstring mkdocstrings cannot read) fails the build.
docs: setup
	$(VENV)/bin/mkdocs build --quiet --strict

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

TEST_DEPS := shim executor-archive minicluster kafka browser lint docs clean-install-smoke

# The pieces build side by side: Maven's and apt's downloads while pip installs, the class
# archives beside the clean install and the type check (2:00 less on a fresh clone).
test-deps:
	$(MAKE) -j4 --output-sync=target $(TEST_DEPS)

# Bytecode of the project's own modules, written once: every driver, executor daemon and app
# process the tests start imports them (PYTHONDONTWRITEBYTECODE=1 would otherwise have each
# compile them again).
compile:
	$(PY) -m compileall -q dstream testbed apps

# Two pytest workers: the fault runs on one, every other test on the other (tests/conftest.py).
PYTEST_WORKERS := -n 2

test: test-deps compile
	$(PY) -m pytest -q -m "not full" $(PYTEST_WORKERS)

# make test, each test charged the CPU of every process it started (scripts/suite_cpu.py).
test-cpu: $(STAMP)
	$(PY) scripts/suite_cpu.py --out build/suite-cpu.json -- \
	  $(MAKE) test PYTEST_WORKERS='$(PYTEST_WORKERS) -p suite_cpu'

# The long variants: every test, the early-kill trials 20 times per source.
test-full: test-deps compile peers
	DSTREAM_EARLY_KILL_TRIALS=20 $(PY) -m pytest -q $(PYTEST_WORKERS)

# The release's two files, as `make dist` builds them: the sdist, then the wheel built FROM
# the sdist (uv build's default), so the sdist is proven to build the same wheel.
# scripts/check_dist.py checks them (twine check, the files each carries, the metadata, and
# that a build without a JDK fails saying so); the wheel, installed with its runtime
# dependencies only into a fresh virtual environment, runs a program that touches every
# feature and an example, from outside the source tree.
SMOKE := build/clean-install
# --offline: `make setup` has put every package these need in uv's cache. pyspark is an
# sdist only, and the package index here answers uv's revalidation as "modified" every time,
# so without it uv downloads pyspark's 400 MB and builds its wheel again for the wheel's
# build environment and again for the fresh venv: 70 s of this target's 75 (2026-12-02).
clean-install-smoke: shim
	rm -rf $(SMOKE) && mkdir -p $(SMOKE)
	$(UV) build --offline --quiet --python $(PY) --out-dir $(SMOKE)/dist .
	$(PY) scripts/check_dist.py --no-java-build $(SMOKE)/dist
	$(PYTHON) -m venv $(SMOKE)/venv
	$(UV) pip install --offline --quiet --python $(SMOKE)/venv/bin/python -c requirements.lock \
		$(SMOKE)/dist/pyspark_dstream-*.whl
	cd $(SMOKE) && PYSPARK_PYTHON=$(CURDIR)/$(SMOKE)/venv/bin/python \
		venv/bin/python $(CURDIR)/tests/smoke/clean_install.py
	cd $(SMOKE) && PYSPARK_PYTHON=$(CURDIR)/$(SMOKE)/venv/bin/python \
		venv/bin/python $(CURDIR)/examples/windowed_counts.py 3 | tee example.out \
		&& grep -q "the incremental and the summed window agree: True" example.out

# The sdist and the wheel a release publishes (built from the sdist, as clean-install-smoke
# checks them), into dist/; a JDK 17+ is needed (setup.py builds the JVM shim into the wheel).
dist: shim
	rm -rf dist
	$(UV) build --offline --python $(PY) --out-dir dist .
	$(PY) scripts/check_dist.py dist

test-fast: setup
	$(PY) -m pytest -q tests/unit

# The fast tier and the clean-install smoke on the supported Pythons beside the lock's 3.11, with
# the dependencies pip resolves for each within the package's ranges (scripts/test-pythons.sh).
PYTHONS ?= 3.12 3.13
test-pythons: shim
	bash scripts/test-pythons.sh $(PYTHONS)

# The fast tier on the newest supported Python, with the dependencies uv resolves for it
# within the package's ranges (pyspark the lock's, from uv's cache). make test runs it as a
# test (tests/integration/test_pythons.py), beside the others.
fast-tier-newest: shim
	bash scripts/fast-tier.sh 3.13

clean:
	rm -rf $(VENV) jvm-shim/*/target dstream/jars build
