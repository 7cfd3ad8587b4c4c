#!/usr/bin/env bash
# The include direction of DESIGN.md §9 / STYLE.md "Layout and dependencies":
#   kernels <- common <- {scheduler, edge_node}
# kernels includes nothing else of the project; common only kernels; the
# scheduler (CLI included) and the node never include each other; only
# common/proto includes the FlatBuffers-generated headers. Prints every
# offending include as FILE:LINE and exits 1 if there is one.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

allowed_for() {
  case "$1" in
    kernels) echo "kernels" ;;
    common) echo "kernels common" ;;
    scheduler) echo "kernels common scheduler" ;;
    edge_node) echo "kernels common edge_node" ;;
  esac
}

status=0
while IFS=: read -r file line text; do
  module=${file%%/*}
  target=$(sed -E 's/^#include "([^/"]+)\/.*/\1/' <<<"$text")
  [[ "$target" == "$text" ]] && continue  # an include without a folder
  if [[ "$target" == schemas ]]; then
    [[ "$file" == common/proto/* ]] && continue
    echo "$file:$line: includes generated FlatBuffers code; only common/proto/ may"
    status=1
    continue
  fi
  if ! grep -qw "$target" <<<"$(allowed_for "$module")"; then
    echo "$file:$line: $module/ must not include $target/ (allowed: $(allowed_for "$module"))"
    status=1
  fi
done < <(git grep -nE '^#include "[^"]+"' -- 'kernels/*' 'common/*' 'scheduler/*' 'edge_node/*')
((status == 0)) && echo "layering: ok"
exit $status
