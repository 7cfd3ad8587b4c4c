#!/usr/bin/env bash
# The tree's checks that need no build: include direction, formatting, and
# what tests may read. tests/run.sh (and so CI) runs them before building.
set -uo pipefail
dir=$(dirname "${BASH_SOURCE[0]}")
status=0
for check in layering format test_paths; do
  "$dir/$check.sh" || status=1
done
exit $status
