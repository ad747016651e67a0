#!/usr/bin/env bash
# The long no-violation runs (not CI): every correct built-in router and the
# binary32 spec, fuzzed for N seconds each (default 600) with a printed random seed, through
# moe_route_v1 and then through moe_route_v2 (one router per distinct v2 kernel).
# Usage: fuzz/long-run.sh [SECONDS] [BUILD_DIR]. Exit 1 if any run finds a violation.
set -uo pipefail
seconds=${1:-600}
build=${2:-build}
bin="$build/bin/moe-oracle"
[[ -x "$bin" ]] || { echo "long-run: $bin not built (cmake --build $build --target moe-oracle)" >&2; exit 2; }
# The built-in routers come from the binary (`moe-oracle list`): the list exists once.
mapfile -t builtins < <("$bin" list)
mapfile -t builtinsV2 < <("$bin" list --abi moe_route_v2)
((${#builtins[@]} > 0 && ${#builtinsV2[@]} > 0)) ||
  { echo "long-run: $bin list printed no router" >&2; exit 2; }
status=0
run() {  # ROUTER ABI
  local seed=$(( (RANDOM << 15) | RANDOM ))
  echo "== $1 ($2): $seconds s, seed $seed"
  "$bin" fuzz --impl "$1" --abi "$2" --seconds "$seconds" --seed "$seed" --json \
    --out "moe-oracle-out/long-run" > "moe-oracle-out-long-$1-$2.json"
  local rc=$?
  cat "moe-oracle-out-long-$1-$2.json"
  if [[ $rc -eq 1 ]]; then status=1; fi
}
for router in spec32 "${builtins[@]}"; do run "$router" moe_route_v1; done
for router in spec32 "${builtinsV2[@]}"; do run "$router" moe_route_v2; done
exit $status
