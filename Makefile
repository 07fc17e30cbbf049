# User-facing targets: `make demo` and `make test`. Both create .venv on first use.
SHELL := /bin/bash
.DEFAULT_GOAL := test

PYTHON ?= python3
VENV := .venv
# The stamp's name carries a hash of pyproject.toml: pip runs again only when it changes.
PYPROJECT_HASH := $(shell $(PYTHON) -c 'import hashlib; print(hashlib.sha256(open("pyproject.toml", "rb").read()).hexdigest()[:16])')
STAMP := $(VENV)/.installed-$(PYPROJECT_HASH)

.PHONY: demo test chaos

demo: $(STAMP)
	$(VENV)/bin/python -m examples.demo

# scripts/install-test-tools.sh: chromium and promtool for the tests that drive them (a no-op
# once they are there; without root it says how and those tests skip).
test: $(STAMP)
	bash scripts/install-test-tools.sh $(VENV)/bin
	bash scripts/test.sh

# A long fault-injection run: tests/chaos/test_chaos.py's faults, then test_crash.py's hard
# Postgres crashes; CHAOS_SECONDS to change both (CHAOS_CRASH_SECONDS the crash round's).
chaos: $(STAMP)
	CHAOS_SECONDS=$${CHAOS_SECONDS:-600} $(VENV)/bin/python -m pytest -q -s -p no:cacheprovider \
		--timeout=$$(( $${CHAOS_SECONDS:-600} + 600 )) tests/chaos

$(STAMP):
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
		|| { echo "error: $(PYTHON) is older than Python 3.11" >&2; exit 1; }
	@[[ -x $(VENV)/bin/python ]] || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --disable-pip-version-check --progress-bar off -e ".[dev]"
	@rm -f $(VENV)/.installed-*
	@touch $@
