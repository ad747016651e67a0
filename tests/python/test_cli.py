"""python3 -m moe_oracle fuzz module:function: the command's output and exit codes."""

import json
import subprocess
import sys
import time

import pytest


def cli(args, env, cwd, timeout=120):
    return subprocess.run([sys.executable, "-m", "moe_oracle", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=timeout)


def test_a_planted_tie_bug_in_a_torch_function_is_found_within_10_s(
        tmp_path, env_with_package, moe_oracle_bin):
    pytest.importorskip("torch")
    start = time.monotonic()
    done = cli(["fuzz", "torch_routers:planted_tie_bug", "--seconds", "10", "--seed", "1",
                "--out", str(tmp_path)], env_with_package, tmp_path)
    assert done.returncode == 1, done.stderr
    assert time.monotonic() - start < 10 + 10 + 15  # the run, the shrink cap, start-up
    lines = done.stdout.splitlines()
    assert lines[-1] == "moe-oracle: torch_routers.planted_tie_bug-tie-higher-index"
    reproducer = lines[0].removeprefix("reproducer: ")
    assert "verdict" not in done.stdout and "certificate" in done.stderr
    replay = subprocess.run([moe_oracle_bin, "replay", reproducer], capture_output=True)
    assert replay.returncode == 0


def test_json_and_a_clean_run(tmp_path, env_with_package):
    pytest.importorskip("torch")
    done = cli(["fuzz", "torch_routers:logits_router", "--seconds", "2", "--seed", "2",
                "--experts", "1-64", "--tokens", "1-8", "--json", "--out", str(tmp_path)],
               env_with_package, tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["impl"] == "torch_routers.logits_router" and summary["violations"] == []
    assert summary["seed"] == 2


@pytest.mark.parametrize("args, says", [
    (["fuzz", "no_such_module:fn"], "cannot load no_such_module:fn"),
    (["fuzz", "routers"], "expected package.module:function"),
    (["fuzz", "routers:spec_router", "--experts", "x"], "experts"),
    (["fuzz", "routers:spec_router", "--contract", '{"tie_ordr": "any"}'], "tie_order"),
    (["fuzz"], "target"),
])
def test_bad_usage_exits_2_and_says_why(args, says, tmp_path, env_with_package):
    done = cli(args + ["--out", str(tmp_path)] if len(args) > 1 else args, env_with_package,
               tmp_path)
    assert done.returncode == 2
    assert says in done.stderr
