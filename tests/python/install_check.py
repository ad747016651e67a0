"""python.install: the package installed as a kernel repository installs it, then used.

A fresh venv (--system-site-packages: Debian's NumPy, torch and pytest) in a temporary folder,
`pip install --no-build-isolation --no-deps --no-index SOURCE` (one CMake build of the
extension and the command, offline), then with that venv's python: the version is CMake's,
a short fuzz of a torch router passes, the console command prints the version, and the
pytest plugin loads from its entry point. The source tree must be left as it was.

    python3 install_check.py SOURCE VERSION [BINARY_DIR]
"""

import os
import pathlib
import subprocess
import sys
import tempfile

CHECK = """
import importlib.metadata, pathlib, sys
venv, version, tests = sys.argv[1:4]
sys.path.insert(0, tests)
import moe_oracle
import torch_routers  # a correct torch router of the project's tests

where = pathlib.Path(moe_oracle.__file__).resolve()
assert where.is_relative_to(pathlib.Path(venv).resolve()), f"imported from {where}, not {venv}"
assert moe_oracle.__version__ == version, (moe_oracle.__version__, version)
assert importlib.metadata.version("moe-oracle") == version, importlib.metadata.version("moe-oracle")
report = moe_oracle.fuzz(torch_routers.logits_router, seconds=1, seed=1, out="out", min_tokens=1)
assert report.exit_code == 0, str(report)
print("fuzzed", report["tokens"], "tokens, exit code", report.exit_code)
"""

# A kernel repository's test, run by the venv's pytest with no -p: the entry point loads the
# plugin. --moe-out keeps its files in the temporary folder.
PLUGIN_TEST = """
import sys
sys.path.insert(0, {tests!r})
import routers


def test_route(moe_fuzz):
    assert moe_fuzz(routers.spec_router, contract=routers.CONTRACT, min_tokens=100).ok
"""


def step(what, args, **kwargs):
    print(f"== {what}: {' '.join(map(str, args))}", flush=True)
    done = subprocess.run(args, text=True, capture_output=True, **kwargs)
    if done.returncode != 0:
        sys.exit(f"FAILED: {what} (exit {done.returncode})\n{done.stdout}\n{done.stderr}")
    return done.stdout


def snapshot(source, binary_dir):
    """Every path under the source tree but .git and the ctest build folder (which ctest
    itself writes to). What a build leaves behind is new paths (build/, *.egg-info,
    __pycache__); contents are not compared, so a developer editing meanwhile is no failure."""
    skip = {source / ".git", binary_dir}
    paths = set()
    for root, dirs, files in os.walk(source):
        dirs[:] = [d for d in dirs if pathlib.Path(root, d) not in skip]
        for name in files + dirs:
            paths.add(str(pathlib.Path(root, name)))
    return paths


def main():
    source = pathlib.Path(sys.argv[1]).resolve()
    version = sys.argv[2]
    binary_dir = pathlib.Path(sys.argv[3]).resolve() if len(sys.argv) > 3 else source / "build"
    before = snapshot(source, binary_dir)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", "2")  # a shared machine: as scripts/test
    env["PIP_NO_INPUT"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the tests' routers are imported from the tree
    tests = pathlib.Path(__file__).resolve().parent
    with tempfile.TemporaryDirectory(prefix="moe-oracle-install-") as tmp:
        tmp = pathlib.Path(tmp)
        venv = tmp / "venv"
        python = venv / "bin" / "python"
        step("venv", [sys.executable, "-m", "venv", "--system-site-packages", venv], env=env)
        step("pip install", [python, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
                             "--no-index", "--no-cache-dir", source], env=env, cwd=tmp)
        print(step("import, version, fuzz", [python, "-c", CHECK, venv, version, tests],
                   env=env, cwd=tmp))
        printed = step("moe-oracle --version", [venv / "bin" / "moe-oracle", "--version"],
                       env=env, cwd=tmp)
        if printed.strip() != f"moe-oracle {version}":
            sys.exit(f"FAILED: moe-oracle --version printed {printed!r}, not {version}")
        (tmp / "kernel").mkdir()
        (tmp / "kernel" / "test_router.py").write_text(PLUGIN_TEST.format(tests=str(tests)),
                                                       encoding="utf-8")
        out = step("pytest plugin from its entry point",
                   [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--moe-seconds", "1",
                    "--moe-out", tmp / "out", "test_router.py"], env=env, cwd=tmp / "kernel")
        if "1 passed" not in out:
            sys.exit(f"FAILED: the plugin's test did not pass\n{out}")
        # As a build tree's instructions say it: with -p on top of the entry point, once.
        out = step("pytest plugin from its entry point and -p",
                   [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                    "moe_oracle.pytest_plugin", "--moe-seconds", "1", "--moe-out",
                    tmp / "out", "test_router.py"], env=env, cwd=tmp / "kernel")
        if "1 passed" not in out:
            sys.exit(f"FAILED: the plugin given twice did not load once\n{out}")
    after = snapshot(source, binary_dir)
    changed = sorted(before ^ after)
    leftovers = [p for pattern in ("lib.*", "bdist.*", "temp.*")
                 for p in (source / "build").glob(pattern)]
    if changed or leftovers:
        sys.exit(f"FAILED: the install wrote into the source tree: {changed + leftovers}")
    print("install: ok")


if __name__ == "__main__":
    main()
