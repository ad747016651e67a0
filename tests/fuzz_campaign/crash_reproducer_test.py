#!/usr/bin/env python3
"""`moe-oracle reproduce` turns a routing input into a reproducer that moe-oracle replays.

A deliberately broken router (broken-no-renorm: gates not renormalised over the kept set)
violates on almost any input (so the test build of the command, moe-oracle-broken, that
knows it runs `reproduce`): it must write a reproducer whose signature it prints,
`moe-oracle replay` must confirm it, a non-matching --signature must write nothing (exit 1),
and a missing input must exit 2.

usage: crash_reproducer_test.py MOE_ORACLE_BROKEN MOE_ORACLE
"""

import glob
import os
import random
import subprocess
import sys
import tempfile


def main(tool, moe_oracle):
    with tempfile.TemporaryDirectory(prefix="moe-crashrep-") as tmp:
        rng = random.Random(20261129)  # fixed: the same inputs every run
        for attempt in range(50):
            data = os.path.join(tmp, f"input-{attempt}")
            with open(data, "wb") as f:
                f.write(rng.randbytes(400))
            out = os.path.join(tmp, f"out-{attempt}")
            r = subprocess.run([tool, "reproduce", "--out", out, "--impl", "broken-no-renorm",
                                data], capture_output=True, text=True, timeout=120)
            if r.returncode == 0:
                break
        else:
            print("FAIL: broken-no-renorm never violated on 50 random inputs")
            return 1
        files = glob.glob(os.path.join(out, "*.json"))
        sig = [ln for ln in r.stdout.splitlines() if ln.startswith("moe-oracle: ")]
        if len(files) != 1 or len(sig) != 1 or "broken-no-renorm-" not in sig[0]:
            print(f"FAIL: want one reproducer and one signature, got {files} {r.stdout!r}")
            return 1
        replay = subprocess.run([moe_oracle, "replay", files[0]], capture_output=True,
                                text=True, timeout=120)
        if replay.returncode != 0:
            print(f"FAIL: moe-oracle replay {files[0]} exited {replay.returncode}: "
                  f"{replay.stderr[-1500:]}")
            return 1
        other = subprocess.run([tool, "reproduce", "--out", os.path.join(tmp, "none"), "--impl",
                                "broken-no-renorm", "--signature", "moe-oracle: other-E1-k1",
                                data], capture_output=True, timeout=120)
        if other.returncode != 1 or os.path.exists(os.path.join(tmp, "none")):
            print(f"FAIL: a non-matching --signature must write nothing and exit 1, "
                  f"got {other.returncode}")
            return 1
        missing = subprocess.run([tool, "reproduce", "--out", tmp,
                                  os.path.join(tmp, "missing")],
                                 capture_output=True, text=True, timeout=60)
        if missing.returncode != 2 or "cannot read" not in missing.stderr:
            print(f"FAIL: a missing input must exit 2 with a message, got "
                  f"{missing.returncode} {missing.stderr!r}")
            return 1
        print(f"OK: {sig[0]} -> {os.path.basename(files[0])}, replayed by moe-oracle")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
