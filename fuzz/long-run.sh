#!/usr/bin/env bash
# The long no-violation runs of issue 4 (not CI): every correct built-in router and the
# binary32 spec, fuzzed for N seconds each (default 600) with a printed random seed.
# Usage: fuzz/long-run.sh [SECONDS] [BUILD_DIR]. Exit 1 if any run finds a violation.
set -uo pipefail
seconds=${1:-600}
build=${2:-build}
bin="$build/bin/moe-oracle"
[[ -x "$bin" ]] || { echo "long-run: $bin not built (cmake --build $build --target moe-oracle)" >&2; exit 2; }
# The built-in routers come from the binary (`moe-oracle list`): the list exists once.
mapfile -t builtins < <("$bin" list)
((${#builtins[@]} > 0)) || { echo "long-run: $bin list printed no router" >&2; exit 2; }
status=0
for router in spec32 "${builtins[@]}"; do
  seed=$(( (RANDOM << 15) | RANDOM ))
  echo "== $router: $seconds s, seed $seed"
  "$bin" fuzz --impl "$router" --seconds "$seconds" --seed "$seed" --json \
    --out "moe-oracle-out/long-run" > "moe-oracle-out-long-$router.json"
  rc=$?
  cat "moe-oracle-out-long-$router.json"
  if [[ $rc -eq 1 ]]; then status=1; fi
done
exit $status
