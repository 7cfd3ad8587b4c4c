#!/usr/bin/env bash
# The main job on the embedded default, from a fresh clone: installs
# dependencies, builds in Release, generates the small demo model (random
# weights) and generates text from it on this machine.
set -euo pipefail
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"

deploy/install-deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DDMOE_BUILD_TESTS=OFF
cmake --build build/release -j "$(nproc)"
exec build/release/scheduler/dancemoe demo "$@"
