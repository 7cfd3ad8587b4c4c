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
# CI's time goes to the cold build (2 cores): no debug info (-g made a test
# file ~45% slower to compile) and one CUDA target, sm_80 with its PTX, which
# every GPU from Ampere on runs (no kernel branches on __CUDA_ARCH__).
# deploy/ and the README's Release build keep the default fat binary.
# A unity build (a target's sources compiled 8 to a translation unit: the
# headers -- json, httplib, cppzmq, doctest, the standard library -- are
# parsed and their templates compiled once per batch, not once per file):
# 1.6-2.1x less compile time on library files, 2.2-3.8x on test files; README,
# "Tests and benchmarks".
cmake -S . -B build/ci -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  -DCMAKE_CUDA_ARCHITECTURES="${DMOE_CUDA_ARCHITECTURES:-80}" -DDMOE_WERROR=ON \
  -DCMAKE_UNITY_BUILD=ON
cmake --build build/ci -j "$jobs"
cd build/ci
ctest --output-on-failure -j "$jobs" --timeout 900 "$@"
