#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs dependencies, runs the
# tree checks (include direction, clang-format, test paths: tests/lint/),
# builds with warnings as errors, and runs every ctest test (unit,
# integration, fuzz smoke runs). This is what .ci/run calls.
set -euo pipefail
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"

deploy/install-deps.sh
tests/lint/run.sh
jobs=$(nproc)
cmake -S . -B build/ci -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDMOE_WERROR=ON
cmake --build build/ci -j "$jobs"
cd build/ci
ctest --output-on-failure -j "$jobs" --timeout 900 "$@"
