#!/usr/bin/env python3
"""The Python door's cost against the C door: one router written in C
(examples/my_router.c), fuzzed at T = 64, E = 64, k = 8 with the same seed, so the same
cases, judged the same way, through each door:

- the C door: `moe-oracle fuzz --impl libmy_router.so` (in process, and in its isolated
  child process, the command's default, when this build has isolation);
- the Python door: `moe_oracle.fuzz` on a Python function that calls the same library
  through ctypes (NumPy arrays in and out), as a user's torch or Triton launcher would.

Prints judged tokens per second for each and the ratio; rounds alternate the doors so that
both see the same load on a shared machine.

    PYTHONPATH=build/python python3 bench/python/door_bench.py --seconds 10 --rounds 3 \\
        --moe-oracle build/bin/moe-oracle --library build/lib/libmy_router.so
"""

import argparse
import ctypes
import json
import statistics
import subprocess
import tempfile

import numpy as np

import moe_oracle

SHAPE = {"experts": "64", "k": "8", "tokens": "64"}


def c_library_router(path):
    """The library's moe_route_v1 as a Python router, and its contract."""
    lib = ctypes.CDLL(path)
    route = lib.moe_route_v1
    route.argtypes = [ctypes.c_int32] * 3 + [ctypes.c_void_p] * 3
    route.restype = ctypes.c_int
    lib.moe_route_v1_contract.restype = ctypes.c_char_p
    contract = json.loads(lib.moe_route_v1_contract())

    def fn(logits, k):
        tokens, experts = logits.shape
        ids = np.empty((tokens, k), np.int32)
        gates = np.empty((tokens, k), np.float32)
        status = route(tokens, experts, k, logits.ctypes.data, ids.ctypes.data,
                       gates.ctypes.data)
        if status != 0:
            raise moe_oracle.Unsupported(f"returned {status}")
        return ids, gates

    return fn, contract


def c_door(binary, library, seconds, seed, out, in_process):
    flags = ["--in-process"] if in_process else []
    done = subprocess.run(
        [binary, "fuzz", "--impl", library, "--seconds", str(seconds), "--seed", str(seed),
         "--json", "--out", out, "--min-tokens", "0", "--shrink-seconds", "0",
         "--experts", SHAPE["experts"], "--k", SHAPE["k"], "--tokens", SHAPE["tokens"], *flags],
        capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"door_bench: moe-oracle fuzz exited {done.returncode}: {done.stderr}")
    summary = json.loads(done.stdout)
    return summary["tokens"] / summary["seconds"], summary


def python_door(fn, contract, seconds, seed, out):
    report = moe_oracle.fuzz(fn, contract=contract, seconds=seconds, seed=seed, out=out,
                             min_tokens=0, shrink_seconds=0, **SHAPE)
    if report.exit_code != 0:
        raise SystemExit(f"door_bench: moe_oracle.fuzz exited {report.exit_code}: {report}")
    return report["tokens"] / report["seconds"], report


def has_isolation(binary):
    done = subprocess.run([binary, "fuzz", "--help"], capture_output=True, text=True)
    return "--in-process" in done.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moe-oracle", default="build/bin/moe-oracle")
    parser.add_argument("--library", default="build/lib/libmy_router.so")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    fn, contract = c_library_router(args.library)
    isolation = has_isolation(args.moe_oracle)
    doors = {"C door, in process": [], "Python door": []}
    if isolation:
        doors["C door, isolated child (the command's default)"] = []
    with tempfile.TemporaryDirectory() as out:
        for _ in range(args.rounds):
            doors["C door, in process"].append(
                c_door(args.moe_oracle, args.library, args.seconds, args.seed, out, isolation))
            doors["Python door"].append(python_door(fn, contract, args.seconds, args.seed, out))
            if isolation:
                doors["C door, isolated child (the command's default)"].append(
                    c_door(args.moe_oracle, args.library, args.seconds, args.seed, out, False))
    print(f"door bench: {contract.get('name')} from {args.library}, E = 64, k = 8, T = 64, "
          f"seed {args.seed}, {args.seconds:g} s a run, {args.rounds} round(s)")
    median = {}
    for door, runs in doors.items():
        rates = [rate for rate, _ in runs]
        median[door] = statistics.median(rates)
        print(f"  {door}: {median[door]:,.0f} judged tokens/s (median; runs: "
              f"{', '.join(f'{r:,.0f}' for r in rates)}; {runs[-1][1]['cases']:,} cases in the "
              f"last)")
    ratio = median["C door, in process"] / median["Python door"]
    print(f"  the Python door is {ratio:.2f}x slower than the C door in process "
          f"(target: at most 2x)")


if __name__ == "__main__":
    main()
