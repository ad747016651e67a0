"""moe_oracle.fuzz: the command's campaign on Python functions: a correct router passes,
each broken one is found and shrunk, its reproducer replays with `moe-oracle replay`, an
exception is a finding with its traceback, Unsupported is an abstention."""

import json
import subprocess

import pytest
import routers

from moe_oracle import Unsupported, fuzz

SMALL = {"experts": "1-64", "tokens": "1-16"}


def run(fn, tmp_path, seconds=3, **kwargs):
    return fuzz(fn, contract=routers.CONTRACT, seconds=seconds, seed=7, out=str(tmp_path),
                **{**SMALL, **kwargs})


def replay(moe_oracle_bin, path):
    done = subprocess.run([moe_oracle_bin, "replay", "--json", path], capture_output=True,
                          text=True)
    return done.returncode, json.loads(done.stdout), done.stderr


def test_a_correct_router_passes_with_the_commands_json_fields(tmp_path, moe_oracle_bin):
    report = run(routers.spec_router, tmp_path)
    assert report.exit_code == 0, str(report)
    assert report.ok and report["violations"] == [] and report.verdicts["violation"] == 0
    assert report.tokens >= 1000 and report.cases > 0
    command = subprocess.run([moe_oracle_bin, "fuzz", "--impl", "spec32", "--seconds", "0.3",
                              "--seed", "1", "--json", "--out", str(tmp_path)],
                             capture_output=True, text=True)
    assert set(report) == set(json.loads(command.stdout))
    assert set(report.coverage) == set(json.loads(command.stdout)["coverage"])


@pytest.mark.parametrize("router, kinds", [
    (routers.tie_higher_index, {"tie-higher-index"}),
    (routers.no_renormalise, {"gate-error"}),
    (routers.last_token_wrong_row, {"kept-set", "beaten-kept"}),
])
def test_each_bug_is_found_shrunk_and_replayable(router, kinds, tmp_path, moe_oracle_bin):
    report = run(router, tmp_path, seconds=20)
    assert report.exit_code == 1, str(report)
    (found,) = report["violations"]
    assert found["kind"] in kinds
    assert found["signature"] == f"moe-oracle: routers.{router.__name__}-{found['kind']}"
    assert found["reproducer"].startswith(str(tmp_path))
    code, answer, stderr = replay(moe_oracle_bin, found["reproducer"])
    assert code == 0 and answer["passed"] == 1, stderr
    shape = found["shape"]
    if router is routers.tie_higher_index:  # shrunk as docs/fuzz.md says: E = 2, k = 1
        assert (shape["experts"], shape["k"], shape["tokens"]) == (2, 1, 1)
    if router is routers.last_token_wrong_row:  # needs a token before the last
        assert shape["tokens"] == 2
    assert found["kind"] in str(report)
    # The finding as a bug-report snippet is the command's, on the same reproducer.
    for language in ("python", "c"):
        explain = subprocess.run([moe_oracle_bin, "explain", "--as", language,
                                  found["reproducer"]], capture_output=True, text=True,
                                 check=True)
        snippet = report.to_python() if language == "python" else report.to_c()
        assert snippet == explain.stdout


def test_an_exception_is_a_finding_with_the_traceback(tmp_path, moe_oracle_bin):
    report = run(routers.raises_on_wide_rows, tmp_path, seconds=20)
    assert report.exit_code == 1
    (found,) = report["violations"]
    assert found["kind"] == "exception"
    assert found["signature"].endswith("raises_on_wide_rows-exception-ValueError")
    assert found["shape"]["experts"] == 9  # shrunk to the narrowest row that raises
    with open(found["reproducer"], encoding="utf-8") as f:
        test = json.load(f)["testGroups"][0]["tests"][0]
    assert "Traceback (most recent call last)" in test["certificate"]
    assert "cannot route 9 experts" in test["certificate"]
    assert 'raise ValueError(f"cannot route' in test["certificate"]
    code, answer, _ = replay(moe_oracle_bin, found["reproducer"])
    assert code == 0 and answer["passed"] == 1


def test_each_distinct_exception_is_its_own_finding(tmp_path):
    # keep_going: the RuntimeError at E = 0 (smallest) must not hide the AttributeError.
    report = run(routers.two_exceptions, tmp_path, seconds=10, experts="0-64", keep_going=True)
    assert report.exit_code == 1
    signatures = {v["signature"]: v for v in report["violations"]}
    attribute = "moe-oracle: routers.two_exceptions-exception-AttributeError"
    runtime = "moe-oracle: routers.two_exceptions-exception-RuntimeError-on-no-experts"
    assert set(signatures) == {attribute, runtime}, signatures
    assert signatures[attribute]["shape"]["k"] == 3
    assert signatures[attribute]["shape"]["experts"] >= 1
    assert signatures[runtime]["shape"]["experts"] == 0
    assert signatures[runtime]["shape"]["degenerate"] == "no-experts"
    assert "in this run only on no experts (E = 0)" in report.text
    assert "has no attribute 'topk_group'" in str(report)


def test_a_wrong_return_is_an_exception_finding_that_says_what_was_expected(tmp_path):
    report = run(lambda logits, k: routers.spec_router(logits, k)[0], tmp_path, seconds=5)
    assert report["violations"][0]["kind"] == "exception"
    assert "must return (ids, gates)" in str(report) or "ids and gates must be" in str(report)


def test_unsupported_is_an_abstention_and_all_abstained_is_insufficient(tmp_path):
    def wide_only(logits, k):
        if logits.shape[1] < 20:
            raise Unsupported("fewer than 20 experts")
        return routers.spec_router(logits, k)

    report = run(wide_only, tmp_path, experts="16-64")
    assert report.abstained > 0 and report.coverage["abstain_reasons"]
    assert report.exit_code == 0, str(report)

    def nothing(logits, k):
        raise Unsupported("no shape")

    report = run(nothing, tmp_path, seconds=0.5)
    assert report.exit_code == 3 and report.coverage["insufficient"]


def test_shapes_and_the_torch_array_contract(tmp_path):
    torch = pytest.importorskip("torch")
    seen = set()

    def torch_router(logits, k):
        assert isinstance(logits, torch.Tensor) and logits.dtype == torch.float32
        seen.add((logits.shape[1], k))
        n = min(k, logits.shape[1])
        ids = torch.sort(logits, dim=1, descending=True, stable=True).indices[:, :n]
        return ids, torch.softmax(torch.gather(logits, 1, ids), dim=-1)

    report = fuzz(torch_router, k=8, experts=64, tokens="1-64", seconds=2, seed=3,
                  out=str(tmp_path), min_tokens=10,
                  contract={"array": "torch", "selects_on": "logits", "slot_order": "rank"})
    assert report.exit_code == 0, str(report)
    assert seen == {(64, 8)}


def test_keyboard_interrupt_ends_the_run_with_its_summary(tmp_path):
    calls = []

    def interrupted(logits, k):
        calls.append(1)
        if len(calls) == 50:
            raise KeyboardInterrupt
        return routers.spec_router(logits, k)

    report = run(interrupted, tmp_path, seconds=30)
    assert report.exit_code == 130 and report.interrupted
    assert report.cases >= 49 and len(calls) == 50


def test_max_cases_and_a_bad_shape_set(tmp_path):
    assert run(routers.spec_router, tmp_path, max_cases=5).cases == 5
    with pytest.raises(ValueError, match="experts"):
        fuzz(routers.spec_router, experts="5000", seconds=1, out=str(tmp_path))


def test_jobs_judge_in_threads_with_the_same_results(tmp_path):
    clock = {"seconds", "cases_per_s", "median_call_seconds", "slow"}
    reports = [run(routers.spec_router, tmp_path / str(jobs), max_cases=60, seconds=600,
                   tokens="64-256", jobs=jobs) for jobs in (1, 2)]
    one, two = ({k: r[k] for k in r if k not in clock} for r in reports)
    assert one == two and one["tokens"] > 3000
    assert one["levels"]["first_level"] > 0
    with pytest.raises(ValueError, match="jobs"):
        run(routers.spec_router, tmp_path, jobs=0)
