#!/usr/bin/env python3
"""Runs .clusterfuzzlite/build.sh outside Docker (clang-14, LIB_FUZZING_ENGINE=-fsanitize=fuzzer)
into OUT, then checks that every fuzzer it leaves runs 100 inputs and exits 0, with its
seed corpus when it has one. Exits 77 (ctest skip) when clang-14 is absent.

usage: clusterfuzzlite_build_test.py REPO OUT
"""

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

SKIP = 77


def main(repo, out):
    if not shutil.which("clang-14"):
        print("SKIP: clang-14 is not installed (scripts/setup-deps)")
        return SKIP
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, OUT=out, CC="clang-14", CXX="clang++-14",
               LIB_FUZZING_ENGINE="-fsanitize=fuzzer", WORK=out + "-work",
               MOE_BUILD_JOBS=os.environ.get("MOE_BUILD_JOBS", "2"))
    for var in ("CFLAGS", "CXXFLAGS"):
        env.pop(var, None)  # build.sh's own sanitizer defaults, as the image would set
    build = subprocess.run([os.path.join(repo, ".clusterfuzzlite", "build.sh")], env=env)
    if build.returncode == 3:
        print("SKIP: the checkout defines no libFuzzer target yet (fuzz/targets)")
        return SKIP
    if build.returncode != 0:
        print(f"FAIL: build.sh exited {build.returncode}")
        return 1
    fuzzers = sorted(p for p in glob.glob(os.path.join(out, "fuzz_*"))
                     if os.access(p, os.X_OK) and os.path.isfile(p))
    if not fuzzers:
        print(f"FAIL: build.sh left no fuzz_* binary in {out}")
        return 1
    failures = 0
    for f in fuzzers:
        name = os.path.basename(f)
        with tempfile.TemporaryDirectory() as corpus:
            seeds = os.path.join(out, f"{name}_seed_corpus.zip")
            if os.path.exists(seeds):
                with zipfile.ZipFile(seeds) as z:
                    z.extractall(corpus)
            run_env = dict(os.environ)
            cmd = [f, "-runs=100", "-rss_limit_mb=2048", corpus]
            if os.path.exists(os.path.join(out, f"{name}.dict")):
                cmd.insert(1, f"-dict={os.path.join(out, name + '.dict')}")
            r = subprocess.run(cmd, capture_output=True, text=True, env=run_env, timeout=300)
        ok = r.returncode == 0
        failures += not ok
        print(f"{'ok' if ok else 'FAIL'}: {name} -runs=100 exited {r.returncode}")
        if not ok:
            print(r.stderr[-3000:])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])))
