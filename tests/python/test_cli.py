"""python3 -m moe_oracle fuzz module:function: the command's output and exit codes."""

import json
import subprocess
import sys
import time

import pytest
import routers


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


def test_cases_ends_the_run_as_the_commands_does(tmp_path, env_with_package):
    summaries = []
    for run in range(2):
        done = cli(["fuzz", "routers:spec_router", "--seconds", "600", "--seed", "3",
                    "--cases", "25", "--min-tokens", "1", "--json",
                    "--out", str(tmp_path / str(run))], env_with_package, tmp_path)
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        assert summary["cases"] == 25
        for timing in ("seconds", "cases_per_s", "median_call_seconds"):
            summary.pop(timing, None)
        summaries.append(summary)
    assert summaries[0] == summaries[1]


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


def _structure(value):
    """A --json value's structure: an object's keys with their values' structures, a list's
    structure by its first element, a number as "number". An object of numbers only (a count
    per reason, per shape bucket: its keys are what the run met) is "counts"."""
    if isinstance(value, dict):
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value.values()):
            return "counts"
        return {k: _structure(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_structure(value[0])] if value else []
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "number"
    return type(value).__name__


def _stderr_labels(text, impl):
    """What each stderr line is (the text before its first colon, the router's name left
    out), without the abstentions' line: it is there only when the kernel abstained."""
    labels = [line.replace(impl, "IMPL").split(":")[0] for line in text.splitlines()]
    return [label for label in labels if label != "abstained (not judged)"]


def test_the_python_door_prints_as_the_command_does(tmp_path, env_with_package, moe_oracle_bin):
    """python -m moe_oracle fuzz and moe-oracle fuzz print through one printer: the same JSON
    fields and layout on stdout, the same header and summary lines on stderr, for the same
    seed and options on a correct router (routers.spec_router, and the built-in spec32)."""
    options = ["--seed", "5", "--seconds", "1", "--experts", "1-16", "--tokens", "1-4"]
    contract = json.dumps(routers.CONTRACT)
    outputs = {}
    for door, command in [
        ("python", [sys.executable, "-m", "moe_oracle", "fuzz", "routers:spec_router",
                    "--contract", contract]),
        ("command", [moe_oracle_bin, "fuzz", "--impl", "spec32"]),
    ]:
        for as_json in (True, False):
            done = subprocess.run(
                command + options + ["--out", str(tmp_path / door)] + (["--json"] * as_json),
                capture_output=True, text=True, env=env_with_package, cwd=tmp_path, timeout=120)
            assert done.returncode == 0, done.stderr
            outputs[door, as_json] = done
    python, command = outputs["python", True], outputs["command", True]
    # One JSON object on one line, as the command's printer writes it (json.dumps would put
    # a space after each colon).
    for done in (python, command):
        assert done.stdout.count("\n") == 1 and '": ' not in done.stdout, done.stdout
    assert _structure(json.loads(python.stdout)) == _structure(json.loads(command.stdout))
    # Without --json, a clean run prints nothing on stdout; the header and summary lines on
    # stderr are the same lines, with or without --json.
    for as_json in (True, False):
        if not as_json:
            assert outputs["python", as_json].stdout == outputs["command", as_json].stdout == ""
        python_labels = _stderr_labels(outputs["python", as_json].stderr, "routers.spec_router")
        command_labels = _stderr_labels(outputs["command", as_json].stderr, "spec32")
        assert python_labels == command_labels
        assert python_labels[0] == "moe-oracle fuzz IMPL"  # the header, before the run
