#!/usr/bin/env bash
# The include direction of DESIGN.md §9 / STYLE.md "Layout and dependencies":
#   kernels <- common <- {scheduler, edge_node}
# kernels includes nothing else of the project; common only kernels; the
# scheduler (CLI included) and the node never include each other; only
# common/proto includes the FlatBuffers-generated headers. Inside common the
# folders are layered too, so what is on disk, what executes and where it
# runs have no include cycle:
#   base <- jinja (chat template interpreter) <- tokenizer;
#   base <- {tensor, runtime, tokenizer} <- model (on disk) <- inference
#   (what executes) <- backend (devices) <- assembly (the runtime built for a
#   device list); model <- placement <- proto <- net; inference <- generation;
#   base <- http (the pieces both HTTP servers share).
# Prints every offending include as FILE:LINE and exits 1 if there is one.
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

# What each folder of common/ may include of common/ besides itself.
allowed_in_common() {
  case "$1" in
    base) echo "" ;;
    tensor | runtime | jinja | http) echo "base" ;;
    tokenizer) echo "base jinja" ;;
    model) echo "base tensor runtime tokenizer" ;;
    placement) echo "base model" ;;
    proto) echo "base tensor model placement" ;;
    net) echo "base tensor model placement proto" ;;
    inference) echo "base tensor runtime model" ;;
    backend) echo "base tensor runtime model inference" ;;
    generation) echo "base tensor runtime tokenizer model inference" ;;
    assembly) echo "base tensor runtime model inference backend" ;;
    *) echo "?" ;;
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
    continue
  fi
  if [[ "$module" == common && "$target" == common ]]; then
    from=$(cut -d/ -f2 <<<"$file")
    to=$(sed -E 's/^#include "common\/([^/"]+)\/.*/\1/' <<<"$text")
    [[ "$from" == "$to" ]] && continue
    allowed=$(allowed_in_common "$from")
    if [[ "$allowed" == "?" ]]; then
      echo "$file:$line: common/$from/ has no place in the layering of tests/lint/layering.sh"
      status=1
    elif ! grep -qw "$to" <<<"$allowed"; then
      echo "$file:$line: common/$from/ must not include common/$to/ (allowed: ${allowed:-nothing})"
      status=1
    fi
  fi
done < <(git grep -nE '^#include "[^"]+"' -- 'kernels/*' 'common/*' 'scheduler/*' 'edge_node/*')
((status == 0)) && echo "layering: ok"
exit $status
