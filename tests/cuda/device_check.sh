#!/usr/bin/env bash
# The GPU checks in one bounded run, for a machine lent for minutes: the two
# CUDA suites case by case (each case in its own process, four at a time,
# so a sticky CUDA error or a hang costs one case, not the suite), the
# cuda:0,cpu cluster case, the GPU benchmarks on the medium preset (bf16 and
# its Q4_K_M file), then compute-sanitizer's memcheck over the kernel suite
# with the time left. Every step is cut to what the budget leaves.
#
#   tests/cuda/device_check.sh pack BUILD_DIR ARCHIVE
#       here: the binaries the run needs (stripped) and the shared
#       libraries they link that a bare CUDA machine lacks, in one
#       .tar.xz -- for a machine without this project's -dev packages.
#   tests/cuda/device_check.sh run BUILD_DIR OUT_DIR [BUDGET_SECONDS]
#       there (BUILD_DIR holds the build, or `pack`'s archive unpacked in
#       the repository root): writes 0_summary.txt (one line per case and
#       step), 1_kernels.txt, 2_backend.txt, 3_cluster.txt, 4_bench.txt and
#       5_memcheck.txt into OUT_DIR. Default budget 360 s.
#
# The binaries keep the absolute source and build paths they were built
# with (fixtures, the node and scheduler the cluster case starts): run from
# a checkout at the same path, or link that path to the checkout.
set -uo pipefail

binaries=(tests/kernels_cuda_tests tests/backend_cuda_tests tests/integration_tests
  tests/bench_cuda_experts tests/bench_cuda_model scheduler/dancemoe scheduler/dancemoe-scheduler
  edge_node/dancemoe-node)

usage() {
  sed -n '2,22p' "$0" >&2
  exit 2
}

pack() {
  local build=$1 archive=$2 stage
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' RETURN
  local dir
  dir="$stage/$(basename "$build")"
  mkdir -p "$dir/lib"
  for b in "${binaries[@]}"; do
    [[ -x "$build/$b" ]] || { echo "device_check: $build/$b is not built" >&2; return 1; }
    mkdir -p "$dir/$(dirname "$b")"
    cp "$build/$b" "$dir/$b"
    strip "$dir/$b"
  done
  # The C library, the C++ runtime and CUDA's own come from the machine.
  ldd "${binaries[@]/#/$build/}" | awk '$3 ~ /^\// {print $3}' | sort -u | while read -r lib; do
    case $(basename "$lib") in
      libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | libresolv.so* | \
        libstdc++* | libgcc_s* | libcublas* | libcuda*) ;;
      *) cp -L "$lib" "$dir/lib/" ;;
    esac
  done
  tar -C "$stage" -cJf "$archive" "$(basename "$build")"
  echo "device_check: packed $(du -h "$archive" | cut -f1) into $archive" \
    "(unpack it where BUILD_DIR's parent is; LD_LIBRARY_PATH gets $(basename "$build")/lib)"
}

run() {
  local build out budget
  build=$(cd "$1" && pwd) || return 1
  out=$2
  budget=${3:-360}
  mkdir -p "$out"
  local t0
  t0=$(date +%s)
  left() { echo $((budget - ($(date +%s) - t0))); }
  # A step's timeout: at most $1, at least 5 s, within what is left.
  cap() {
    local l
    l=$(left)
    ((l < 5)) && l=5
    ((l < $1)) && echo "$l" || echo "$1"
  }
  local summary=$out/0_summary.txt
  export LD_LIBRARY_PATH="$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local cublas
  cublas=$(find / -xdev -name 'libcublas.so.*' 2> /dev/null | head -1)
  [[ -n "$cublas" ]] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$cublas")"
  {
    if command -v nvidia-smi > /dev/null; then nvidia-smi -L 2>&1; else echo "nvidia-smi: not found"; fi
    for b in "${binaries[@]}"; do
      ldd "$build/$b" 2>&1 | grep 'not found' | sed "s|^|$b: |"
    done
  } > "$summary"
  local scratch
  scratch=$(mktemp -d)
  cd "$build" || return 1

  # The medium preset and its Q4_K_M file, on the CPU while the suites run.
  (
    ./scheduler/dancemoe make-model --preset medium --out "$scratch/medium" > "$scratch/models.txt" 2>&1 &&
      ./scheduler/dancemoe quantize --model "$scratch/medium" --out "$scratch/medium-q4_k_m.gguf" \
        --type q4_k_m >> "$scratch/models.txt" 2>&1
    touch "$scratch/models.done"
  ) &
  local models_pid=$!

  # $1 suite, $2 output file: every case in its own process. doctest's -tc
  # takes a comma as a separator: a name's commas become the wildcard '?'.
  suite() {
    local bin=./tests/$1 dir=$scratch/$1 per
    per=$(cap 150)
    mkdir -p "$dir"
    "$bin" -ltc 2> /dev/null | grep -v '^\[doctest\]\|^====\|^$' > "$dir/names"
    local n=0 pids=()
    while IFS= read -r name; do
      n=$((n + 1))
      (
        local s
        s=$(date +%s)
        timeout -k 5 "$per" "$bin" -tc="${name//,/?}" > "$dir/$n.txt" 2>&1
        echo "rc=$? $(($(date +%s) - s)) s  $name" > "$dir/$n.sum"
      ) &
      pids+=($!)
      # Four cases at a time (the model generation is a fifth job).
      while (($(jobs -rp | wc -l) >= 5)); do sleep 0.2; done
    done < "$dir/names"
    wait "${pids[@]}"
    {
      for i in $(seq 1 "$n"); do cat "$dir/$i.sum"; done
      for i in $(seq 1 "$n"); do
        echo "##### $(sed 's/^rc=[0-9]* [0-9]* s  //' "$dir/$i.sum")"
        head -c 2000000 "$dir/$i.txt"
      done
    } > "$out/$2"
    echo "[$(($(date +%s) - t0)) s] $1: $(grep -c '^rc=0 ' "$out/$2") of $n cases pass" >> "$summary"
    grep '^rc=' "$out/$2" | grep -v '^rc=0 ' >> "$summary"
  }
  suite kernels_cuda_tests 1_kernels.txt
  suite backend_cuda_tests 2_backend.txt

  {
    timeout -k 5 "$(cap 120)" ./tests/integration_tests -tc='devices: a cuda:0?cpu node*'
    echo "rc $?"
  } > "$out/3_cluster.txt" 2>&1
  echo "[$(($(date +%s) - t0)) s] cluster case: $(tail -1 "$out/3_cluster.txt")" >> "$summary"

  {
    timeout -k 5 "$(cap 60)" ./tests/bench_cuda_experts
    echo "rc $?"
    while [[ ! -e "$scratch/models.done" ]] && (($(left) > 60)); do sleep 1; done
    cat "$scratch/models.txt"
    timeout -k 5 "$(cap 90)" ./tests/bench_cuda_model --model "$scratch/medium"
    echo "rc $?"
    timeout -k 5 "$(cap 60)" ./tests/bench_cuda_model --model "$scratch/medium" --prompt-tokens 1024
    echo "rc $?"
    timeout -k 5 "$(cap 40)" ./scheduler/dancemoe bench --model "$scratch/medium-q4_k_m.gguf" \
      --devices cuda:0 --json
    echo "rc $?"
  } > "$out/4_bench.txt" 2>&1
  echo "[$(($(date +%s) - t0)) s] benchmarks: $(grep -c '^rc 0' "$out/4_bench.txt") of 4 ran" \
    >> "$summary"

  {
    local sanitizer
    sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2> /dev/null | head -1)
    if [[ -z "$sanitizer" ]]; then
      echo "compute-sanitizer: not found"
    elif (($(left) < 30)); then
      echo "memcheck: skipped, $(left) s of the budget left"
    else
      timeout -k 5 "$(cap 300)" "$sanitizer" --tool memcheck --print-limit 20 ./tests/kernels_cuda_tests
      echo "rc $?"
    fi
  } > "$out/5_memcheck.txt" 2>&1
  echo "[$(($(date +%s) - t0)) s] memcheck: $(grep -E 'ERROR SUMMARY|rc |skipped|not found' \
    "$out/5_memcheck.txt" | tr '\n' ' ')" >> "$summary"
  # The model job, if still running, and the dancemoe it runs.
  pkill -P "$models_pid" 2> /dev/null
  kill "$models_pid" 2> /dev/null
  wait "$models_pid" 2> /dev/null
  rm -rf "$scratch"
  cat "$summary"
}

case "${1:-}" in
  pack) (($# == 3)) || usage; pack "$2" "$3" ;;
  run) (($# == 3 || $# == 4)) || usage; run "$2" "$3" "${4:-360}" ;;
  *) usage ;;
esac
