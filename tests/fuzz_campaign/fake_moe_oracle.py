#!/usr/bin/env python3
"""A stand-in for `moe-oracle fuzz --json` in the campaign runner's own test.

scalar-probs: clean; scalar-logits: one violation with a reproducer; anything else: not
available (exit 2), as on a CPU without that ISA. It sleeps briefly like a real run and
echoes --abi in its JSON. `list` prints those and avx512-logits; `list --abi moe_route_v2`
scalar-probs.
"""

import argparse
import json
import os
import sys
import time

if sys.argv[1:2] == ["list"]:
    print("scalar-probs" if "moe_route_v2" in sys.argv
          else "scalar-probs\nscalar-logits\navx512-logits")
    sys.exit(0)
p = argparse.ArgumentParser()
p.add_argument("command")
p.add_argument("--impl", required=True)
p.add_argument("--abi")
p.add_argument("--seconds", type=float, default=1)
p.add_argument("--seed", type=int, default=0)
p.add_argument("--out", default="moe-oracle-out")
p.add_argument("--json", action="store_true")
p.add_argument("--jobs", type=int, required=True)  # the campaign gives each router its cores
a = p.parse_args()
if a.command != "fuzz" or a.impl not in ("scalar-probs", "scalar-logits"):
    print(f"moe-oracle: router {a.impl} is not available on this CPU", file=sys.stderr)
    sys.exit(2)
time.sleep(min(a.seconds, 1))
result = {"impl": a.impl, "abi": a.abi, "seed": a.seed, "seconds": a.seconds, "cases": 1000,
          "tokens": 4000,
          "cases_per_s": 1000.0 / a.seconds,
          "verdicts": {"exact": 990, "acceptable": 10, "violation": 0},
          "acceptable_reasons": {"near-tie": 10}, "levels": {"float": 990, "mpfr": 10},
          "violations": []}
code = 0
if a.impl == "scalar-logits":
    os.makedirs(a.out, exist_ok=True)
    rep = os.path.join(a.out, "scalar-logits-tie-E5-k2.json")
    with open(rep, "w") as f:
        json.dump({"algorithm": "moe-topk-routing", "testGroups": []}, f)
    result["verdicts"] = {"exact": 999, "acceptable": 0, "violation": 1}
    result["violations"] = [{"signature": "moe-oracle: scalar-logits-tie-E5-k2",
                             "kind": "tie", "reproducer": rep}]
    print("moe-oracle: scalar-logits-tie-E5-k2", file=sys.stderr)
    code = 1
print(json.dumps(result))
sys.exit(code)
