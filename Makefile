# ek-agents: `make demo`, `make test`, `make bench`. Each bootstraps .venv itself on a machine
# that has only Python 3.11 and make.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python

# Offline by construction: no telemetry from Prefect or anything else.
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export DO_NOT_TRACK := 1
export LITELLM_LOCAL_MODEL_COST_MAP := True
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo test bench bench-scale docs docs-serve clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# setup.py and the C sources too: a changed extension is rebuilt by the next install
$(VENV)/.dev-installed: pyproject.toml setup.py ek_agents/scoring/_callcodes.c ek_agents/bridge/_otlpspans.c | $(PY)
	$(PY) -m pip install -q -e '.[dev,s3,dask,plot]'
	touch $@

$(VENV)/.run-installed: pyproject.toml setup.py ek_agents/scoring/_callcodes.c ek_agents/bridge/_otlpspans.c | $(PY)
	$(PY) -m pip install -q -e '.[examples]'
	touch $@

demo: $(VENV)/.run-installed
	$(VENV)/bin/ek-agents demo

# Two xdist workers (CI has 2 cores; many tests wait on servers), each test file whole on one
# (its module fixtures built once), the longest files first (tests/conftest.py LONGEST_FIRST);
# PYTEST_XDIST= runs in one process. pytest exits 5 when it collected nothing: that is a
# failure, said out loud.
PYTEST_XDIST ?= -n 2 --dist loadfile --no-loadscope-reorder
test: $(VENV)/.dev-installed
	@$(PY) -m pytest $(PYTEST_XDIST) $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests" >&2; fi; exit $$rc

bench: $(VENV)/.dev-installed
	$(PY) -m bench

# A million trials (10,000 tasks x k=100) in segments on a LocalCluster of 2 worker
# processes, moto's S3 server and a Prefect server; minutes of both cores, so not in `make bench`.
# BENCH_SCALE_ARGS="--tasks 1000" measures 100,000 instead.
bench-scale: $(VENV)/.dev-installed
	$(PY) -m bench.scale $(BENCH_SCALE_ARGS)

# The documentation site (MkDocs, Material theme, the API reference from the docstrings):
# --strict, so a broken link, a missing page or an unresolved reference fails the build.
export NO_MKDOCS_2_WARNING := 1
docs: $(VENV)/.dev-installed
	$(PY) -m mkdocs build --strict -d site

docs-serve: $(VENV)/.dev-installed
	$(PY) -m mkdocs serve --strict -a 127.0.0.1:8000

clean:
	rm -rf $(VENV) .ek .pytest_cache build site *.egg-info
