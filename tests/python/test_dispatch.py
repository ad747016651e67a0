"""The Python dispatch door: fuzz_dispatch on NumPy dispatch kernels (a correct one runs
clean with the command's --json fields; each broken one is caught with its kind, shrunk, and
leaves a reproducer that `moe-oracle replay` and `explain` read), judge_dispatch and
assert_dispatch on one answer, and the dispatch_cases strategy."""

import json
import os
import subprocess
import sys

import dispatchers
import numpy as np
import pytest
from hypothesis import HealthCheck, find, given, settings

from moe_oracle import Unsupported, assert_dispatch, fuzz_dispatch, judge_dispatch
from moe_oracle.strategies import DispatchCase, dispatch_cases

SEARCH = settings(max_examples=300, database=None, deadline=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))


def run(fn, tmp_path, seconds=3, **kwargs):
    return fuzz_dispatch(fn, seconds=seconds, seed=11, out=str(tmp_path), **kwargs)


def command(moe_oracle_bin, *args):
    return subprocess.run([moe_oracle_bin, *args], capture_output=True, text=True)


def test_a_correct_dispatcher_runs_clean_with_the_commands_json_fields(tmp_path, moe_oracle_bin):
    report = run(dispatchers.spec_dispatch, tmp_path)
    assert report.exit_code == 0, str(report)
    assert report.ok and report["violations"] == [] and report.abi == "moe_dispatch_v1"
    assert report.tokens >= 1000 and report.passed == report.cases > 0
    # Cases inside the domain only: a function has no statuses to judge.
    assert report.coverage["outside_domain"] == 0
    assert report.coverage["capacity"].get("limited", 0) > 0
    library = os.environ.get("MOE_DISPATCH_EIGEN")
    if not library:
        pytest.skip("MOE_DISPATCH_EIGEN (libmoe_dispatch_eigen.so) not set: ctest sets it")
    done = command(moe_oracle_bin, "fuzz", "--impl", library, "--seconds", "0.3", "--seed", "1",
                   "--json", "--out", str(tmp_path))
    assert set(report) == set(json.loads(done.stdout)), done.stderr
    assert set(report.coverage) == set(json.loads(done.stdout)["coverage"])


@pytest.mark.parametrize("dispatcher, kind", [
    (dispatchers.last_block_unpadded, "bad-padding"),
    (dispatchers.capacity_keeps_last, "capacity-order"),
    (dispatchers.padding_counted, "rows-count"),
])
def test_each_bug_is_caught_with_its_kind_shrunk_and_replayable(dispatcher, kind, tmp_path,
                                                                moe_oracle_bin):
    report = run(dispatcher, tmp_path, seconds=20)
    assert report.exit_code == 1, str(report)
    (found,) = report["violations"]
    assert found["kind"] == kind, str(report)
    assert found["signature"] == f"moe-oracle: dispatchers.{dispatcher.__name__}-{kind}"
    assert found["reproducer"].startswith(str(tmp_path))
    shape = found["shape"]
    assert shape["tokens"] <= 2 and shape["experts"] <= 2, shape  # shrunk from the drawn case
    assert kind in str(report)
    done = command(moe_oracle_bin, "replay", "--json", found["reproducer"])
    assert done.returncode == 0 and json.loads(done.stdout)["passed"] == 1, done.stderr
    told = command(moe_oracle_bin, "explain", found["reproducer"])
    assert told.returncode == 0 and f"violation: {kind}" in told.stdout, told.stderr
    snippet = report.to_python()
    assert snippet == command(moe_oracle_bin, "explain", found["reproducer"], "--as",
                              "python").stdout
    # Run as written it fails on the recorded answer; pointed at a correct dispatch, passes.
    run_snippet = subprocess.run([sys.executable, "-c", snippet], capture_output=True, text=True)
    assert run_snippet.returncode == 1 and "AssertionError" in run_snippet.stderr, run_snippet
    fixed = snippet.replace("dispatch = None", "from dispatchers import spec_dispatch as dispatch")
    assert fixed != snippet
    run_fixed = subprocess.run([sys.executable, "-c", fixed], capture_output=True, text=True,
                               env={**os.environ, "PYTHONPATH": os.path.dirname(__file__)})
    assert run_fixed.returncode == 0, run_fixed.stderr


def test_an_exception_is_a_finding_with_its_traceback(tmp_path):
    report = run(dispatchers.raises_on_empty, tmp_path, seconds=10)
    assert report.exit_code == 1
    (found,) = report["violations"]
    assert (found["kind"], found["signature"]) == (
        "exception", "moe-oracle: dispatchers.raises_on_empty-exception-IndexError")
    assert "an empty slot" in str(report) and "dispatchers.py" in str(report)


def test_a_wrong_answer_type_is_an_exception_finding_naming_it(tmp_path):
    report = run(lambda ids, k, e, b, c: (None, None), tmp_path, seconds=2)
    assert report.exit_code == 1
    assert "must return (sorted_slots, block_expert, rows)" in str(report)


def test_unsupported_is_an_abstention(tmp_path):
    def picky(ids, k, experts, block, capacity):
        if block != 16:
            raise Unsupported("block 16 only")
        return dispatchers.spec_dispatch(ids, k, experts, block, capacity)

    report = run(picky, tmp_path, seconds=2)
    assert report.exit_code == 3 and report.abstained > 0 and report["violations"] == []
    assert run(picky, tmp_path, seconds=2, block=16).exit_code == 0


def test_ctrl_c_ends_the_run_with_its_summary(tmp_path):
    calls = []

    def interrupted(ids, k, experts, block, capacity):
        calls.append(1)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return dispatchers.spec_dispatch(ids, k, experts, block, capacity)

    report = run(interrupted, tmp_path, seconds=30)
    assert (report.exit_code, report.interrupted, report.cases) == (130, True, 4), str(report)
    assert report.seconds < 10


def reversed_within_experts(ids, k, experts, block, capacity):
    """Each expert's slots listed last first, as a kernel filling with atomics may."""
    sorted_slots, block_expert, rows = dispatchers.spec_dispatch(ids, k, experts, block, capacity)
    pad = np.asarray(ids).size
    out = sorted_slots.copy()
    start = 0
    for n in np.bincount(np.repeat(block_expert, block), minlength=experts):
        region = out[start:start + n]
        region[:] = np.concatenate([region[region != pad][::-1], region[region == pad]])
        start += n
    return out, block_expert, rows


def test_within_expert_order_any_is_the_contracts(tmp_path):
    slot = run(reversed_within_experts, tmp_path, seconds=5)
    assert [v["kind"] for v in slot["violations"]] == ["slot-order"], str(slot)
    anyorder = run(reversed_within_experts, tmp_path, seconds=2,
                   contract={"within_expert_order": "any"})
    assert anyorder.exit_code == 0, str(anyorder)


def test_a_routers_contract_is_refused_by_name():
    with pytest.raises(ValueError, match="selects_on"):
        fuzz_dispatch(dispatchers.spec_dispatch, contract={"selects_on": "logits"}, seconds=1)


IDS = np.array([[0, 2], [2, -1], [0, 2], [1, 2]], dtype=np.int32)


def test_judge_dispatch_passes_the_spec_and_names_a_broken_answer():
    assert judge_dispatch(IDS, *dispatchers.spec_dispatch(IDS, 2, 3, 4, 2), experts=3, block=4,
                          capacity=2).ok
    wrong = judge_dispatch(IDS, *dispatchers.capacity_keeps_last(IDS, 2, 3, 4, 2), experts=3,
                           block=4, capacity=2)
    assert wrong.kind == "capacity-order" and "capacityKeeps" in wrong.certificate
    with pytest.raises(AssertionError, match="bad-padding"):
        # Expert 2's four slots take two blocks of 3; the second is left short.
        assert_dispatch(IDS, *dispatchers.last_block_unpadded(IDS, 2, 3, 3, -1), experts=3,
                        block=3)
    with pytest.raises(ValueError, match=r"ids\[0, 1\] = 2 is neither -1 nor in 0..1"):
        judge_dispatch(IDS, *dispatchers.spec_dispatch(IDS, 2, 3, 4, -1), experts=2, block=4)


@SEARCH
@given(dispatch_cases(experts="0-16", k="0-4", tokens="0-12"))
def test_the_strategy_draws_cases_the_spec_dispatch_passes(case):
    assert isinstance(case, DispatchCase) and case.ids.shape == (case.tokens, case.k)
    assert ((case.ids >= -1) & (case.ids < max(case.experts, 1))).all()
    assert_dispatch(case.ids, *dispatchers.spec_dispatch(case.ids, case.k, case.experts,
                                                         case.block, case.capacity),
                    experts=case.experts, block=case.block, capacity=case.capacity)


def test_hypothesis_shrinks_a_broken_dispatcher_to_a_small_case():
    def fails(case):
        out = dispatchers.capacity_keeps_last(case.ids, case.k, case.experts, case.block,
                                              case.capacity)
        return not judge_dispatch(case.ids, *out, experts=case.experts, block=case.block,
                                  capacity=case.capacity).ok

    case = find(dispatch_cases(experts="1-16", k="1-4", tokens="1-12"), fails, settings=SEARCH)
    # The smallest case: one expert holding two slots, capacity 1 keeps the later one.
    assert (case.experts, case.capacity, case.block) == (1, 1, 1), case
    assert case.ids.size == 2 and (case.ids == 0).all(), case


def test_the_strategy_refuses_a_bad_shape_set():
    with pytest.raises(ValueError, match="block"):
        dispatch_cases(block="0-4")
