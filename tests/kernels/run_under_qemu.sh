#!/usr/bin/env bash
# Runs the kernel tests on emulated CPUs (QEMU user mode) and checks that each
# detects its level and passes:
#   -cpu Haswell  AVX2 + FMA + F16C, no AVX-512  -> level avx2
#   -cpu Nehalem  SSE4.2, no AVX at all          -> level scalar
# An AVX-512 (or, on Nehalem, any AVX) instruction reached outside the
# dispatch (see check_isa_confinement.sh) dies here with SIGILL: QEMU's TCG
# does not implement AVX-512, and Nehalem has no AVX.
#
# usage: run_under_qemu.sh KERNELS_TEST_BINARY [doctest args...]
# exit: 0 when both pass; 77 (skipped) when qemu-x86_64 is missing.
set -euo pipefail

if ! command -v qemu-x86_64 >/dev/null 2>&1; then
  echo "SKIP: qemu-x86_64 not found (Debian package qemu-user; deploy/install-deps.sh installs it)"
  exit 77
fi
binary=$1
shift
status=0
for cpu_and_level in Haswell:avx2 Nehalem:scalar; do
  cpu=${cpu_and_level%%:*}
  level=${cpu_and_level##*:}
  echo "== qemu-x86_64 -cpu $cpu (expects level $level)"
  # TCG warns about CPUID bits it does not model (TSX, PCID...); irrelevant here.
  if ! env -u DMOE_CPU DMOE_EXPECT_CPU_LEVEL="$level" qemu-x86_64 -cpu "$cpu" "$binary" "$@" \
    2> >(grep -v "TCG doesn't support requested feature" >&2); then
    echo "FAIL: kernel tests on emulated $cpu"
    status=1
  fi
done
exit $status
