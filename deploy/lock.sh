#!/usr/bin/env bash
# Regenerate the image's pinned, hashed dependency locks from pyproject.toml:
#   deploy/requirements.lock        the production extras (`workers`, which includes `postgres`)
#   deploy/build-requirements.lock  what builds the project's wheel (setuptools)
# Needs uv (`pip install uv`). Run it after changing the dependencies in pyproject.toml;
# tests/deploy/test_lock.py fails while the lock does not match pyproject.toml.
#
#   deploy/lock.sh             re-resolve, keeping the pinned versions that still fit
#   deploy/lock.sh --upgrade   re-resolve to the newest versions
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

UV=${UV:-uv}
# Universal: one lock for every platform the image may be built on (amd64, arm64), with
# markers for the interpreters (the image runs Python 3.11: Debian bookworm's or python:3.11).
common=(--generate-hashes --universal --python-version 3.11 --custom-compile-command "deploy/lock.sh")

"$UV" pip compile pyproject.toml --extra workers "${common[@]}" "$@" \
    -o deploy/requirements.lock
printf 'setuptools>=68\n' | "$UV" pip compile - "${common[@]}" "$@" \
    -o deploy/build-requirements.lock
