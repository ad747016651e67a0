"""examples/python: the example's pytest file passes on the Mixtral router and fails, with
the oracle's explanation, on each buggy variant; the NumPy router passes a fuzz run; the
DeepSeek-V3 grouped_topk (the routing family) passes its tests and its buggy variant fails
them with gate-bias."""

import pathlib
import re
import subprocess
import sys

import pytest

from moe_oracle import fuzz

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"


def example_pytest(router, env, tmp_path, test_file="test_mixtral_router.py", stop=True):
    env = {**env, "MOE_ROUTER": router}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *(["-x"] if stop else []),
         str(EXAMPLES / test_file)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)


def test_the_example_passes_on_the_mixtral_router(env_with_package, tmp_path):
    pytest.importorskip("torch")
    done = example_pytest("route", env_with_package, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout


@pytest.mark.parametrize("router, kinds", [
    ("route_without_renormalising", ["gate-error"]),
    ("route_last_token_from_wrong_row", ["beaten-kept", "kept-set"]),
    ("route_in_bfloat16", ["gate-error", "beaten-kept"]),
])
def test_the_example_fails_on_each_bug_with_the_explanation(router, kinds, env_with_package,
                                                            tmp_path):
    pytest.importorskip("torch")
    done = example_pytest(router, env_with_package, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "AssertionError" in done.stdout
    assert "verdict for router (recorded output): violation [" in done.stdout
    assert any(f"violation [{kind}]" in done.stdout for kind in kinds), done.stdout


def test_the_numpy_router_passes_a_fuzz_run(tmp_path):
    sys.path.insert(0, str(EXAMPLES))
    try:
        import numpy_router
    finally:
        sys.path.remove(str(EXAMPLES))
    report = fuzz(numpy_router.route, seconds=3, seed=11, out=str(tmp_path), experts="1-256",
                  tokens="1-32")
    assert report.exit_code == 0, str(report)
    assert report.impl == "numpy_router.route"


def test_the_deepseek_example_passes_on_grouped_topk(env_with_package, tmp_path):
    pytest.importorskip("torch")
    done = example_pytest("route", env_with_package, tmp_path, "test_deepseek_router.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout


def test_the_deepseek_example_fails_on_gates_with_bias(env_with_package, tmp_path):
    pytest.importorskip("torch")
    done = example_pytest("route_gates_with_bias", env_with_package, tmp_path,
                          "test_deepseek_router.py", stop=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "verdict for router (recorded output): violation [gate-bias]" in done.stdout
    for test in ("test_a_deepseek_v3_batch", "test_a_short_fuzz_run"):  # the bias is drawn
        assert re.search(rf"FAILED \S*test_deepseek_router.py::{test}\b", done.stdout), done.stdout
