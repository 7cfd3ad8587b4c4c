#!/usr/bin/env bash
# Fails if any function outside the SIMD kernel folders contains an AVX-512
# (EVEX-encoded) or AVX/AVX2 (VEX-encoded) instruction.
#
# The project is compiled for baseline x86-64 and must run on AVX2-only CPUs.
# Only kernels/cpu/avx2 (namespace dancemoe::kernels::avx2) may use VEX, and
# only kernels/cpu/avx512 (dancemoe::kernels::avx512 and ::avx512bf16) may
# use EVEX. The classic way to break this is an inline function or template
# (std:: included) instantiated in a SIMD translation unit: it is emitted as a
# weak symbol compiled with the SIMD flags and the linker may keep that copy
# for every caller. Checking the kernel archive catches such symbols even when
# the linker happened to keep a safe copy; checking the executables catches
# whatever was linked.
#
# Instructions are classified by their encoding, not by their text: in 64-bit
# mode a first opcode byte (after segment / address-size prefixes) of 0x62 is
# EVEX and of 0xc4 / 0xc5 is VEX.
#
# Functions with internal linkage (local symbols, e.g. the `static inline`
# helpers of kernels/cpu/numeric.h when a Debug build does not inline them
# into a SIMD TU) are allowed anywhere: only their own TU can call them, so
# they cannot be picked by the linker for baseline callers.
#
# usage: check_isa_confinement.sh FILE...   (executables, objects, archives)
# exit: 0 clean, 1 violations, 77 (skipped) when objdump is missing.
set -euo pipefail

if ! command -v objdump >/dev/null 2>&1; then
  echo "SKIP: objdump not found (Debian package binutils)"
  exit 77
fi
if (($# == 0)); then
  echo "usage: $0 FILE..." >&2
  exit 2
fi

status=0
for file in "$@"; do
  if [[ ! -f "$file" ]]; then
    echo "FAIL: $file does not exist"
    status=1
    continue
  fi
  # Local function symbols as "<object index>:<address>"; the index counts
  # archive members in order (names may repeat), 1 for a plain file.
  locals=$(nm --defined-only "$file" 2>/dev/null | awk -v archive="$([[ $(head -c 7 "$file") == '!<arch>' ]] && echo 1 || echo 0)" '
    BEGIN { index_ = archive ? 0 : 1 }
    /^[^ ]+:$/ { ++index_; next }
    NF == 3 && $2 == "t" { print index_ ":" $1 }')
  # --insn-width keeps long EVEX instructions on one line.
  report=$( (echo "$locals"; echo "END-OF-LOCALS"; objdump -d -C --insn-width=16 "$file") | awk '
    function classify(bytes,    n, b, i) {
      n = split(bytes, b, " ")
      for (i = 1; i <= n; ++i) {
        if (b[i] ~ /^(2e|36|3e|26|64|65|67)$/) continue
        if (b[i] == "62") return "evex"
        if (b[i] == "c4" || b[i] == "c5") return "vex"
        return ""
      }
      return ""
    }
    !disassembly {
      if ($0 == "END-OF-LOCALS") disassembly = 1; else local_fn[$0] = 1
      next
    }
    / file format / { ++object; next }
    /^[0-9a-f]+ <.*>:$/ {
      fn = substr($0, index($0, "<") + 1)
      fn = substr(fn, 1, length(fn) - 2)
      fn_is_local = (object ":" $1) in local_fn
      next
    }
    /^ *[0-9a-f]+:\t/ {
      split($0, field, "\t")
      kind = classify(field[2])
      if (kind == "") next
      allowed = fn ~ /dancemoe::kernels::avx512/ || (kind == "vex" && fn ~ /dancemoe::kernels::avx2/)
      if (allowed) { ++ok; next }
      if (fn_is_local) { ++local_ok; next }
      key = kind " " fn
      if (!(key in seen)) {
        seen[key] = 1
        ++bad
        if (bad <= 20) printf("  %s instruction in %s: %s\n", toupper(kind), fn, field[3])
      }
    }
    END {
      if (bad > 20) printf("  ... and %d more functions\n", bad - 20)
      printf("SUMMARY %d %d %d\n", ok + 0, bad + 0, local_ok + 0)
    }')
  summary=$(grep '^SUMMARY' <<<"$report")
  read -r _ n_simd n_bad n_local <<<"$summary"
  if ((n_bad > 0)); then
    echo "FAIL: $file: $n_bad function(s) outside kernels/cpu/avx2|avx512 use SIMD encodings:"
    grep -v '^SUMMARY' <<<"$report"
    status=1
  else
    echo "ok: $file ($n_simd SIMD instructions in the kernel namespaces, $n_local in local helpers)"
  fi
done
exit $status
