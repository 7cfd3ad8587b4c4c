#!/usr/bin/env bash
# Runs the kernel tests on an emulated AVX2-only CPU (QEMU user mode, -cpu
# Haswell: AVX2 + FMA + F16C, no AVX-512) and checks that the avx2 level is
# detected and every test passes. An AVX-512 instruction reached outside the
# dispatch (see check_isa_confinement.sh) would die here with SIGILL, since
# QEMU's TCG does not implement AVX-512.
#
# usage: run_under_qemu.sh KERNELS_TEST_BINARY [doctest args...]
# exit: the test binary's status; 77 (skipped) when qemu-x86_64 is missing.
set -euo pipefail

if ! command -v qemu-x86_64 >/dev/null 2>&1; then
  echo "SKIP: qemu-x86_64 not found (Debian package qemu-user; deploy/install-deps.sh installs it)"
  exit 77
fi
binary=$1
shift
# TCG warns about CPUID bits it does not model (TSX, PCID...); irrelevant here.
env -u DMOE_CPU DMOE_EXPECT_CPU_LEVEL=avx2 qemu-x86_64 -cpu Haswell "$binary" "$@" \
  2> >(grep -v "TCG doesn't support requested feature" >&2)
