#!/usr/bin/env bash
# Install the programs some tests drive, from Debian's packages:
#   chromium  the web inbox's browser test (tests/e2e/test_ui_browser.py)
#   promtool  Prometheus' rule checker (tests/deploy/test_monitoring.py), taken out of
#             Debian's `prometheus` package without installing or starting its server
#
#   scripts/install-test-tools.sh [BIN_DIR]     # promtool goes to BIN_DIR (default .venv/bin)
#
# `make test` runs it first. A tool already found is left alone. chromium needs root (or
# passwordless sudo); promtool only needs apt-get's package lists. Without them the script
# says what is missing and how to get it, and the tests that need it skip saying why; with
# GRAPHRUNTIME_REQUIRE_TEST_TOOLS=1 (.ci/run sets it) a missing tool is an error instead.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BIN_DIR=${1:-.venv/bin}
REQUIRED=${GRAPHRUNTIME_REQUIRE_TEST_TOOLS:-0}
APT=(-o Acquire::Retries=3 -o DPkg::Lock::Timeout=300 -qq)
export DEBIAN_FRONTEND=noninteractive
missing=()

sudo_cmd=()
can_install=false
if [[ $(id -u) -eq 0 ]]; then
    can_install=true
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo_cmd=(sudo -n)
    can_install=true
fi
have_apt=false
command -v apt-get >/dev/null 2>&1 && have_apt=true

updated=false
apt_update() {
    if ! $updated && $can_install; then
        timeout 600 "${sudo_cmd[@]}" apt-get "${APT[@]}" update </dev/null
        updated=true
    fi
}

# promtool: the package's binary only (statically linked Go; the package would also install
# and, outside systemd, start a Prometheus server).
install_promtool() {
    local scratch deb
    scratch=$(mktemp -d)
    chmod 755 "$scratch"  # apt-get download fetches as the _apt user
    # shellcheck disable=SC2064
    trap "rm -rf '$scratch'" RETURN
    if ! (cd "$scratch" && timeout 600 apt-get "${APT[@]}" download prometheus </dev/null); then
        apt_update || return 1
        (cd "$scratch" && timeout 600 apt-get "${APT[@]}" download prometheus </dev/null) || return 1
    fi
    deb=$(ls "$scratch"/prometheus_*.deb)
    mkdir -p "$BIN_DIR"
    dpkg-deb --fsys-tarfile "$deb" | tar -x -O ./usr/bin/promtool >"$BIN_DIR/promtool.part"
    chmod +x "$BIN_DIR/promtool.part"
    mv "$BIN_DIR/promtool.part" "$BIN_DIR/promtool"
    "$BIN_DIR/promtool" --version 2>&1 | head -1
}

if [[ -x $BIN_DIR/promtool ]] || command -v promtool >/dev/null 2>&1; then
    :
elif $have_apt && command -v dpkg-deb >/dev/null 2>&1; then
    echo "Installing promtool (from Debian's prometheus package) into $BIN_DIR."
    install_promtool || missing+=("promtool: apt-get download prometheus failed")
else
    missing+=("promtool: no apt-get here; put Prometheus' promtool on PATH")
fi

if [[ -n ${GRAPHRUNTIME_CHROMIUM:-} ]] || command -v chromium >/dev/null 2>&1 \
    || command -v chromium-browser >/dev/null 2>&1; then
    :
elif $have_apt && $can_install; then
    echo "Installing Debian's chromium for the browser test."
    if ! { apt_update && timeout 1200 "${sudo_cmd[@]}" apt-get "${APT[@]}" install -y \
        --no-install-recommends chromium </dev/null >/dev/null; }; then
        missing+=("chromium: apt-get install chromium failed")
    fi
else
    missing+=("chromium: run 'sudo apt-get install chromium' (or set GRAPHRUNTIME_CHROMIUM)")
fi

if [[ ${#missing[@]} -gt 0 ]]; then
    for line in "${missing[@]}"; do
        echo "warning: $line; the tests that need it skip" >&2
    done
    if [[ $REQUIRED == 1 ]]; then
        echo "error: GRAPHRUNTIME_REQUIRE_TEST_TOOLS=1 and test tools are missing" >&2
        exit 1
    fi
fi
exit 0
