"""Where the tests find what they drive: the moe-oracle command (replay and explain read what
the Python door writes) and this folder's routers. ctest passes MOE_ORACLE_BIN; run by hand,
build/bin/moe-oracle is used when it exists."""

import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # routers, torch_routers


@pytest.fixture(scope="session")
def moe_oracle_bin():
    path = os.environ.get("MOE_ORACLE_BIN") or str(ROOT / "build" / "bin" / "moe-oracle")
    if not os.access(path, os.X_OK):
        pytest.skip(f"the moe-oracle command is not built at {path} (set MOE_ORACLE_BIN)")
    return path


@pytest.fixture
def env_with_package():
    """The environment for a child python3: this package importable, no bytecode written
    into the source tree."""
    env = dict(os.environ)
    import moe_oracle
    package_root = str(pathlib.Path(moe_oracle.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(
        [package_root, str(pathlib.Path(__file__).resolve().parent),
         env.get("PYTHONPATH", "")])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env
