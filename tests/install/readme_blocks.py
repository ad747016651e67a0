"""install.readme: README's "Use it from your project" blocks, run as written.

Each block the test runs follows a marker line `<!-- readme-test: NAME -->` in README.md; a
missing marker or block fails the test, so the README cannot drop a block silently. The blocks
run with bash (-e: any failing line fails the test) in a fresh folder where `moe-oracle` is
this source tree as a clone would be (its build/ is this ctest's build tree) and HOME is the
folder itself, so that nothing outside it is written. The folder is a new temporary one,
outside the source tree as a user's own repository is: inside it, pytest would take the
source tree's pyproject.toml for its root and write its cache there (which python.install,
running beside this test, sees as the install writing into the tree). It is removed when
every block has run, and kept (its path printed) when one fails.

usage: readme_blocks.py SOURCE_DIR BUILD_DIR
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

# The blocks, in the order they run: (marker, what to do with the block's text).
BLOCKS = ["venv", "pytest-test", "pytest", "cmake-install", "cmake-lists", "cmake-test",
          "cmake-build"]

MARKED = re.compile(r"^<!-- readme-test: ([a-z-]+) -->\n```[a-z]*\n(.*?)^```$",
                    re.MULTILINE | re.DOTALL)


def fail(message):
    print(f"install.readme: {message}", file=sys.stderr)
    sys.exit(1)


def marked_blocks(readme):
    found = {name: text for name, text in MARKED.findall(readme)}
    missing = [name for name in BLOCKS if name not in found]
    if missing:
        fail(f"README.md has no block after <!-- readme-test: {missing[0]} --> "
             f"(the blocks this test runs: {', '.join(BLOCKS)})")
    return found


def clone_of(source, build, where):
    """A folder that looks like a clone with a build: every top-level entry of the source
    linked, build/ linked to this ctest's build tree."""
    where.mkdir()
    for entry in source.iterdir():
        if entry.name not in ("build", ".git"):
            (where / entry.name).symlink_to(entry)
    (where / "build").symlink_to(build)


def keep_ccache_dir(env):
    """A ccache in use (CMAKE_CXX_COMPILER_LAUNCHER) keeps its cache when HOME moves."""
    if "CCACHE_DIR" in env or shutil.which("ccache") is None:
        return
    asked = subprocess.run(["ccache", "-k", "cache_dir"], stdout=subprocess.PIPE, text=True)
    if asked.returncode == 0 and asked.stdout.strip():
        env["CCACHE_DIR"] = asked.stdout.strip()


def run(name, script, cwd, env):
    print(f"install.readme: running block {name} in {cwd}:\n{script}", flush=True)
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(done.stdout, flush=True)
    if done.returncode != 0:
        fail(f"block {name} exited {done.returncode}")
    return done.stdout


def main():
    if len(sys.argv) != 3:
        fail(__doc__.strip().splitlines()[-1])
    source, build = (pathlib.Path(a).resolve() for a in sys.argv[1:])
    blocks = marked_blocks((source / "README.md").read_text(encoding="utf-8"))
    work = pathlib.Path(tempfile.mkdtemp(prefix="moe-oracle-readme-")).resolve()
    print(f"install.readme: working in {work} (kept if a block fails)", flush=True)
    clone_of(source, build, work / "moe-oracle")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    keep_ccache_dir(env)
    env["HOME"] = str(work)

    run("venv", blocks["venv"], work, env)
    (work / "test_router.py").write_text(blocks["pytest-test"], encoding="utf-8")
    out = run("pytest", blocks["pytest"], work, env)
    if not re.search(r"\b1 passed\b", out):
        fail("the pytest block did not pass its one test")

    run("cmake-install", blocks["cmake-install"], work, env)
    project = work / "my-kernel"
    project.mkdir()
    (project / "CMakeLists.txt").write_text(blocks["cmake-lists"], encoding="utf-8")
    (project / "router_test.cpp").write_text(blocks["cmake-test"], encoding="utf-8")
    out = run("cmake-build", blocks["cmake-build"], project, env)
    if not re.search(r"100% tests passed, 0 tests failed out of [1-9]", out):
        fail("the CMake block's ctest did not pass")
    print("install.readme: every block ran")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
