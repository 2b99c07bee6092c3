# The two commands: `make demo` and `make test`. Both create .venv when missing.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP_RUN  := $(VENV)/.installed-run
STAMP_TEST := $(VENV)/.installed-test
DEMO_WF  ?= cwl-examples/scatter-gather/scatter-gather.cwl
DEMO_JOB ?= cwl-examples/scatter-gather/job.yml

.PHONY: demo test venv clean bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP_RUN): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(STAMP_TEST): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'
	touch $@ $(STAMP_RUN)

venv: $(STAMP_RUN)

demo: $(STAMP_RUN)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/plastic plan $(DEMO_WF) $(DEMO_JOB)

test: $(STAMP_TEST)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -q -p no:cacheprovider; \
	  rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests selected"; exit 0; fi; exit $$rc

bench: $(STAMP_TEST)
	$(BIN)/pip install -q -e '.[test,bench]'
	$(BIN)/python bench/plan_quality.py

clean:
	rm -rf $(VENV) build *.egg-info
