"""The console script moe-oracle (pyproject.toml, [project.scripts]): runs the command's own
binary, shipped in this package as _bin/moe-oracle by the wheel's build (setup.py).

Why exec the binary rather than bind moe::fuzz::runCommand in _core and call it here: the
command then runs exactly as build/bin/moe-oracle does, in a process of its own, with its own
signal handling (SIGINT / SIGTERM end a campaign with exit 130 / 143), its own stdout and
exit status, and no Python interpreter or GIL in the way of a long campaign or a router
library it loads. exec replaces this process, so nothing of Python stays in between.
"""

import os
import pathlib
import sys

_PACKAGE = pathlib.Path(__file__).resolve().parent


def binary():
    """The moe-oracle binary: the installed package's copy; in a build tree (PYTHONPATH=
    build/python) the one CMake built beside it, build/bin/moe-oracle."""
    for path in (_PACKAGE / "_bin" / "moe-oracle", _PACKAGE.parents[1] / "bin" / "moe-oracle"):
        if os.access(path, os.X_OK):
            return str(path)
    return None


def main():
    path = binary()
    if path is None:
        sys.stderr.write(f"moe-oracle: the command's binary is not in {_PACKAGE / '_bin'}: "
                         "install the package with pip (README, \"Use it from your project\")\n")
        return 2
    sys.stdout.flush()
    os.execv(path, ["moe-oracle", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
