#!/usr/bin/env bash
# Tests read nothing outside the repository but ../shared (the routing
# traces), and reach that only through testing::shared_file(), which fails
# under CI when it is missing. Scratch files go under the build tree
# (testing::TempDir). Flags literal paths into home, work or temporary
# directories, parent-directory escapes, the temp directory, $HOME, and any
# other use of the shared directory. A line that must keep such a path (a
# path-traversal attack in a fixture, say) ends with `// lint: path-ok`.
# Benchmarks (tests/bench) are run by hand and may take --tmp.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
pattern='"(/tmp|/work|/root|/home|~/)|"\.\./|temp_directory_path|getenv\("(HOME|TMPDIR)"\)|DMOE_SHARED_DIR|shared_dir\(\)'
status=0
while IFS= read -r hit; do
  file=${hit%%:*}
  case "$file" in
    tests/support/paths.* | tests/CMakeLists.txt | tests/lint/*) continue ;;
  esac
  [[ "$hit" == *"// lint: path-ok"* ]] && continue
  echo "$hit"
  status=1
done < <(git grep -nE "$pattern" -- 'tests/*' ':!tests/bench/*' ':!tests/fixtures/*' || true)
if ((status)); then
  echo "test paths: tests above read outside the repository (use testing::TempDir or testing::shared_file)"
else
  echo "test paths: ok"
fi
exit $status
