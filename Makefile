# `make demo`: set up .venv and run the contract suite on this machine (one-node cluster).
# `make test`: set up .venv and run the plugin's own tests.
# `make test-fast`: the tests not marked slow, on 2 pytest-xdist workers (while you work).
# `make test-extra-clause`: the same with one more GPU clause installed through the extension
# point (tests/extra_clause.py): no test counts cases or clauses by hand.
# `make docs`: rewrite the docs' generated tables (clauses, sections, launchers, error kinds,
# fault codes, sim faults, plausible ranges) from the registries;
# tests/test_docs_generated.py holds them.
# `make gpu-check`: every GPU path on this machine's GPU beside plain torch loops (one line
# and exit 0 without CUDA); GPU_PYTHON: a python with torch+CUDA and pytest-cluster.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# torch is needed on the nodes only (import latency); here the local machine is the node.
# The CPU build keeps the download small where a local wheel is not at hand.
TORCH ?= torch==2.13.0
STAMP := $(VENV)/.installed-stamp

# .venv's python where it exists (CI: no CUDA), else the python3 that holds torch
GPU_PYTHON ?= $(if $(wildcard $(BIN)/python),$(BIN)/python,$(PYTHON))

.PHONY: demo test test-fast test-extra-clause lint docs bench gpu-check clean

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install --quiet "$(TORCH)" numpy \
		|| $(BIN)/pip install --quiet "$(TORCH)" numpy --index-url https://download.pytorch.org/whl/cpu
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	@PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest --cluster=examples/localhost.yaml \
		--cluster-reports=reports -p no:hypothesispytest; status=$$?; \
	echo; echo "Evidence: reports/latest/ (report.html junit.xml results.jsonl verdict.json inventory.json manifest.intoto.json; check it: $(BIN)/pytest-cluster verify reports/latest)"; \
	exit $$status

test: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest $(PYTEST_ARGS)

test-fast: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest -m "not slow" -n 2 -p no:cacheprovider $(PYTEST_ARGS)

test-extra-clause: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" PYTEST_CLUSTER_TEST_EXTRA_CLAUSE=1 $(BIN)/pytest -m "not slow" \
		-n 2 -p no:cacheprovider $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

docs: $(STAMP)
	$(BIN)/python docs/generate.py

gpu-check:
	PATH="$(CURDIR)/$(BIN):$$PATH" $(GPU_PYTHON) bench/gpu_check.py $(GPU_CHECK_ARGS)

bench: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python bench/overhead.py
	$(BIN)/python bench/gpu_fidelity.py
	$(BIN)/python bench/fanout.py
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python bench/allreduce_fidelity.py
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python bench/faults.py
	$(BIN)/python bench/hostile_specs.py
	$(BIN)/python bench/hostile_evidence.py
	$(BIN)/python bench/hostile_parsers.py
	$(BIN)/python bench/hostile_baseline.py
	$(BIN)/python bench/hostile_probes.py
	$(BIN)/python bench/hostile_options.py
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python bench/hostile_nodes.py
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python bench/hostile_claims.py
	$(BIN)/python bench/hostile_gate.py
	$(BIN)/python bench/hostile_extensions.py
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python bench/hostile_facts.py
	$(BIN)/python bench/report_load.py
	$(BIN)/python bench/scale.py
	$(BIN)/python bench/cluster_scale.py
	$(BIN)/python bench/xdist.py
	$(BIN)/python bench/soak.py
	$(BIN)/python bench/soak_report.py
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python bench/truth.py --scenarios 200

clean:
	rm -rf $(VENV) reports build *.egg-info
