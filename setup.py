"""The wheel's build: the package moe_oracle from python/, its extension _core and the command
moe-oracle built by the project's own CMake (pyproject.toml holds the metadata).

Why a setup.py: the backend must be one Debian 12 ships (setuptools 66; scikit-build-core is
not in bookworm), and setuptools knows nothing of CMake, so build_ext below configures the
project with the default preset into a temporary folder, builds only the two targets the
package ships, and copies them next to the Python files.

Nothing is written into the source tree: pip builds a local directory in place, and
setuptools would otherwise put build/ (the CMake preset's folder) and an .egg-info there.
"""

import atexit
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent


def cmake_version():
    """project(moe-oracle VERSION x.y.z) in CMakeLists.txt: the project's one version."""
    text = (ROOT / "CMakeLists.txt").read_text(encoding="utf-8")
    found = re.search(r"project\(\s*moe-oracle\s+VERSION\s+([0-9][0-9.]*)", text)
    if not found:
        raise RuntimeError("CMakeLists.txt: no project(moe-oracle VERSION ...)")
    return found.group(1)


class CMakeBuild(build_ext):
    """Builds moe_oracle._core and the command moe-oracle with CMake instead of compiling
    sources itself. The command is shipped as a file of the package (moe_oracle/_bin/) and
    run by the console script (moe_oracle/_command.py says why)."""

    # Tests, benchmarks, the libtorch peer and the CUDA router are the project's own
    # checks, not part of the package: off, so a user's machine needs neither GoogleTest,
    # Google Benchmark, libtorch's CMake files nor nvcc, and the build stays two targets.
    OPTIONS = ["-DMOE_BUILD_TESTS=OFF", "-DMOE_BUILD_BENCH=OFF", "-DMOE_TORCH_PEER=OFF",
               "-DMOE_CUDA=OFF"]
    TARGETS = ["moe_oracle_core", "moe-oracle"]

    def build_extension(self, ext):
        build_dir = pathlib.Path(self.build_temp).resolve() / "cmake"
        # The preset's compiler and flags; -B moves its binaryDir out of the tree, and the
        # extension is built for the interpreter running pip (a venv's python included).
        subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build_dir), "--preset", "default",
                        *self.OPTIONS, f"-DPython3_EXECUTABLE={sys.executable}"], check=True)
        # CMAKE_BUILD_PARALLEL_LEVEL in the environment sets the jobs, as for any cmake --build.
        subprocess.run(["cmake", "--build", str(build_dir), "--target", *self.TARGETS],
                       check=True)
        built = list((build_dir / "python" / "moe_oracle").glob("_core.*.so"))
        if len(built) != 1:
            raise RuntimeError(f"expected one _core extension in {build_dir}, found {built}")
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built[0], target)
        command = target.parent / "_bin" / "moe-oracle"
        command.parent.mkdir(exist_ok=True)
        shutil.copy2(build_dir / "bin" / "moe-oracle", command)  # keeps the executable bit


# build/ and the .egg-info go to a scratch folder, removed when this process ends (pip runs
# each build step as its own process, and the wheel is written before it ends).
scratch = tempfile.mkdtemp(prefix="moe-oracle-wheel-")
atexit.register(shutil.rmtree, scratch, True)

setup(
    version=cmake_version(),
    ext_modules=[Extension("moe_oracle._core", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": os.path.join(scratch, "build")},
             "egg_info": {"egg_base": scratch}},
)
