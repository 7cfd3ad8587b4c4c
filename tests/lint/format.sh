#!/usr/bin/env bash
# Every tracked C++ and CUDA file is formatted as .clang-format says
# (clang-format 14, Debian 12's). Prints the files that differ and exits 1 if
# there is one; `clang-format -i FILE` fixes a file.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
if ! command -v clang-format >/dev/null; then
  echo "format: clang-format is missing (deploy/install-deps.sh installs it)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
mapfile -t bad < <(clang-format --dry-run "${files[@]}" 2>&1 | grep -oE '^[^:]+:[0-9]+:[0-9]+: (warning|error)' |
  cut -d: -f1 | sort -u)
if ((${#bad[@]})); then
  printf 'format: not clang-formatted: %s\n' "${bad[@]}"
  exit 1
fi
echo "format: ok (${#files[@]} files)"
