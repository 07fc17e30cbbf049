#!/usr/bin/env bash
# Lint, type-check, check the import layering, then run the test suite.
#
#   scripts/test.sh [PYTEST_ARGS...]
#
# Extra arguments go to pytest, e.g. `scripts/test.sh -k resume -x`.
# Every stage runs even if an earlier one failed, so one run shows all problems; the script
# exits non-zero if any stage failed.
# Uses the tools in .venv (see `make test`, which creates it) when present.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ -x .venv/bin/python ]]; then
    export PATH="$PWD/.venv/bin:$PATH"
fi

failed=()

# run_stage NAME COMMAND...: print a header, run the command, record a failure.
run_stage() {
    local name=$1
    shift
    printf '\n==> %s\n' "$name"
    local status=0
    "$@" || status=$?
    if [[ $status -ne 0 ]]; then
        printf '==> %s FAILED (exit %d)\n' "$name" "$status" >&2
        failed+=("$name")
    fi
}

# Four pytest runs: everything but tests/e2e and the vendored suites on 2 xdist workers; the
# vendored tests of LangGraph and langgraph-prebuilt (tests/upstream, tests/upstream_prebuilt,
# against graphruntime; the parity gaps listed in their expected_failures.txt are xfail) on 2
# workers; LangChain's agent tests (tests/upstream_langchain) on 2 workers in a process of their
# own, since they run through the langgraph import alias, which is process-wide; then tests/e2e
# in one process.
# The end-to-end tests share one cluster of real celery workers and kill and restart workers,
# Redis and Postgres; they must not be split across processes (and xdist's loadgroup does not
# keep a group together with this pytest). The upstream tests run apart because their harness
# patches imports (see tests/upstream/README.md).
# pytest exits 5 when it collected nothing: an empty run overall is a bug, not a pass.
run_pytest() {
    local fast=0 upstream=0 langchain=0 e2e=0
    python -m pytest -n "${PYTEST_WORKERS:-2}" -q --ignore=tests/e2e --ignore=tests/upstream \
        --ignore=tests/upstream_prebuilt --ignore=tests/upstream_langchain \
        --ignore=tests/chaos "$@" \
        || fast=$?
    # -rfEX: the parity gaps are xfail by the hundred; list failures, errors and XPASS only.
    python -m pytest -n "${PYTEST_WORKERS:-2}" -q -rfEX tests/upstream tests/upstream_prebuilt \
        "$@" || upstream=$?
    python -m pytest -n "${PYTEST_WORKERS:-2}" -q -rfEX tests/upstream_langchain "$@" \
        || langchain=$?
    # tests/chaos: a short fault-injection round (make chaos runs a long one). The crash
    # mode (test_crash.py) is make chaos's only: a crash between a job's async commits and
    # the durable commit vouching for them can still lose them (the strict xfail in
    # tests/integration/workers/test_crash_durability.py), so a short round is not reliable.
    CHAOS_SECONDS="${CHAOS_SECONDS:-30}" python -m pytest -q tests/e2e tests/chaos \
        --ignore=tests/chaos/test_crash.py "$@" || e2e=$?
    if [[ $fast -eq 5 && $upstream -eq 5 && $langchain -eq 5 && $e2e -eq 5 ]]; then
        echo "error: pytest collected no tests; an empty run is a bug (wrong path, -k or -m?)" >&2
        return 5
    fi
    for status in "$fast" "$upstream" "$langchain" "$e2e"; do
        if [[ $status -ne 0 && $status -ne 5 ]]; then
            return "$status"
        fi
    done
    return 0
}

# Only the packages that exist: checkpoint_pg and workers are still to come.
typed_dirs=()
for dir in graphruntime checkpoint_pg workers tests; do
    if [[ -d $dir ]]; then
        typed_dirs+=("$dir")
    fi
done

run_stage "ruff check" ruff check .
run_stage "mypy ${typed_dirs[*]}" mypy "${typed_dirs[@]}"
run_stage "lint-imports" lint-imports
run_stage "pytest" run_pytest "$@"

if [[ ${#failed[@]} -gt 0 ]]; then
    printf '\nFAILED: %s\n' "$(IFS=,; echo "${failed[*]}")" >&2
    exit 1
fi
printf '\nAll checks passed.\n'
