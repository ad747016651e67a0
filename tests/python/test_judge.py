"""moe_oracle.judge and assert_routes on correct and broken routers written in Python."""

import json
import subprocess
import sys

import numpy as np
import pytest
import routers

import moe_oracle
from moe_oracle import assert_routes, judge

CONTRACT = routers.CONTRACT


def batch(seed=0, tokens=32, experts=64):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((tokens, experts)).astype(np.float32)


def test_correct_router_is_judged_ok_token_by_token():
    x = batch()
    result = judge(x, *routers.spec_router(x, 8), 8, contract=CONTRACT)
    assert result.ok, str(result)
    assert [v.token for v in result.verdicts] == list(range(32))
    assert {v.outcome for v in result.verdicts} <= {"exact", "acceptable"}
    assert result.counts()["violation"] == 0
    assert result.reproducer is None
    assert "32 token(s) judged" in str(result)


def test_tie_to_the_higher_index_is_a_violation_with_its_certificate():
    x = np.zeros((1, 2), np.float32)
    result = judge(x, [[1]], [[1.0]], 1, contract=CONTRACT)
    assert not result.ok
    (v,) = result.violations
    assert (v.kind, v.token, v.outcome) == ("tie-higher-index", 0, "violation")
    assert v.certificate
    assert "tie-higher-index" in str(result)


def test_the_tie_bug_router_is_caught_on_a_row_with_a_tie():
    x = np.array([[0.5, 2.0, 2.0, -1.0]], np.float32)
    result = judge(x, *routers.tie_higher_index(x, 1), 1, contract=CONTRACT)
    assert [v.kind for v in result.violations] == ["tie-higher-index"]


def test_no_renormalisation_is_a_gate_error():
    x = batch(1, tokens=4)
    result = judge(x, *routers.no_renormalise(x, 2), 2, contract=CONTRACT)
    assert len(result.violations) == 4
    assert {v.kind for v in result.violations} == {"gate-error"}


def test_a_wrong_row_for_the_last_token_is_found_on_that_token_only():
    x = batch(2, tokens=5)
    result = judge(x, *routers.last_token_wrong_row(x, 4), 4, contract=CONTRACT)
    assert [v.token for v in result.violations] == [4]
    assert result.violations[0].kind in {"kept-set", "beaten-kept"}
    assert all(v.outcome != "violation" for v in result.verdicts[:4])
    assert len(result.verdicts) == 5  # the tokens after a violation are judged too


def test_str_is_the_explanation_moe_oracle_explain_gives(tmp_path, moe_oracle_bin):
    x = batch(3, tokens=3, experts=6)
    result = judge(x, *routers.no_renormalise(x, 2), 2, contract=CONTRACT, name="numpy-router")
    path = result.save(tmp_path / "finding.json")
    explain = subprocess.run([moe_oracle_bin, "explain", str(path)], capture_output=True,
                             text=True, check=True)
    assert str(result) == explain.stdout
    replay = subprocess.run([moe_oracle_bin, "replay", "--json", str(path)],
                            capture_output=True, text=True)
    assert replay.returncode == 0, replay.stderr
    assert json.loads(replay.stdout)["passed"] == 1


def run_snippet(source):
    """Executes a to_python() snippet here; returns its variables and its assert's message."""
    names = {}
    with pytest.raises(AssertionError) as raised:
        exec(compile(source, "snippet", "exec"), names)
    return names, str(raised.value)


def test_to_python_is_a_torch_snippet_that_shows_the_specs_answer(tmp_path, moe_oracle_bin):
    torch = pytest.importorskip("torch")
    # Expert 1 (2.0) beats the router's expert 0 (1.0); the spec keeps 1 then 2, ties by index.
    x = np.array([[1.0, 2.0, 2.0, 0.5], [0.25, -1.0, 3.0, 1e-45]], np.float32)
    right_ids, right_gates = routers.spec_router(x[1:], 2)  # the second token routed right
    ids = [[2, 0], np.asarray(right_ids)[0].tolist()]
    gates = np.concatenate([np.array([[0.5, 0.5]], np.float32), right_gates]).astype(np.float32)
    result = judge(x, ids, gates, 2, contract=CONTRACT, name="numpy-router")
    (v,) = result.violations
    source = result.to_python()
    assert "import torch" in source and "float.fromhex(" in source
    names, message = run_snippet(source)
    assert names["expected_ids"] == [1, 2]
    assert names["got_ids"].tolist() == ids
    assert message == f"moe-oracle: {v.kind}: {v.certificate}"
    # The tensors are the judged arrays bit for bit.
    assert names["logits"].dtype == torch.float32
    assert names["logits"].numpy().view(np.uint32).tolist() == x.view(np.uint32).tolist()
    assert names["got_gates"].numpy().view(np.uint32).tolist() == gates.view(np.uint32).tolist()
    # Run as a script it prints both answers and fails on the router's.
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True)
    assert done.returncode == 1
    assert "expected ids   [1, 2]" in done.stdout and "got ids        [2, 0]" in done.stdout
    assert f"AssertionError: moe-oracle: {v.kind}" in done.stderr
    # The same program as `moe-oracle explain --as python|c` on the saved reproducer.
    path = result.save(tmp_path / "finding.json")
    for language, text in (("python", source), ("c", result.to_c())):
        explain = subprocess.run([moe_oracle_bin, "explain", "--as", language, str(path)],
                                 capture_output=True, text=True, check=True)
        assert text == explain.stdout
    assert "static const float logits[8]" in result.to_c()


def test_to_python_carries_the_family_and_its_answer():
    pytest.importorskip("torch")
    x = np.array([[1.0, 2.0, 3.0, 4.0]], np.float32)
    family = {"score": "sigmoid", "bias": np.array([0, 0, 0, -1], np.float32),
              "renormalize": True, "scale": 2.5}
    # The keys s + b keep experts 2 then 1; the gates are not renormalised and scaled.
    result = judge(x, [[2, 1]], [[0.5, 0.5]], 2, family=family)
    assert not result.ok
    names, message = run_snippet(result.to_python())
    assert names["expected_ids"] == [2, 1]
    got = names["family"]
    assert (got["score"], got["groups"], got["topk_groups"], got["renormalize"],
            got["scale"]) == ("sigmoid", 1, 1, True, 2.5)
    assert got["bias"].tolist() == [0.0, 0.0, 0.0, -1.0]
    assert message.startswith(f"moe-oracle: {result.violations[0].kind}: ")
    assert "static const moe_route_params_v2 params" in result.to_c()


def test_a_result_without_a_violation_has_no_snippet():
    x = batch(5, tokens=2, experts=8)
    result = judge(x, *routers.spec_router(x, 2), 2, contract=CONTRACT)
    with pytest.raises(ValueError, match="no violation"):
        result.to_python()
    with pytest.raises(ValueError, match="no violation"):
        result.to_c()


def test_assert_routes_raises_with_the_explanation_and_passes_a_correct_router():
    x = batch(4, tokens=2, experts=8)
    assert assert_routes(x, *routers.spec_router(x, 2), 2, contract=CONTRACT).ok
    with pytest.raises(AssertionError) as raised:
        assert_routes(x, *routers.no_renormalise(x, 2), 2, contract=CONTRACT)
    message = str(raised.value)
    assert message.startswith("2 of 2 token(s) violate the spec (gate-error)")
    assert "verdict for router (recorded output): violation [gate-error]" in message


def test_k_above_e_takes_min_k_e_slots_or_k_padded_slots():
    x = np.array([[1.0, 3.0]], np.float32)
    ids, gates = routers.spec_router(x, 4)
    assert ids.shape == (1, 2) and ids.tolist() == [[1, 0]]
    assert judge(x, ids, gates, 4, contract=CONTRACT).ok
    padded_ids = np.concatenate([ids, [[-1, -1]]], axis=1)
    padded_gates = np.concatenate([gates, [[0, 0]]], axis=1)
    assert judge(x, padded_ids, padded_gates, 4, contract=CONTRACT).ok
    padded_ids[0, 2] = 0  # a repeated id in a slot past E
    assert not judge(x, padded_ids, padded_gates, 4, contract=CONTRACT).ok


def test_one_token_rows_and_the_contracts_knobs():
    x = np.zeros(3, np.float32)
    strict = judge(x, [2], [1.0], 1)
    assert [v.kind for v in strict.violations] == ["tie-higher-index"]
    relaxed = judge(x, [2], [1.0], 1, tie_order="any")
    assert relaxed.ok and relaxed.verdicts[0].reason == "tie-order"
    assert judge(x, [2], [1.0], 1, contract={"tie_order": "any"}).ok


def test_bad_input_is_refused_with_the_reason():
    x = batch(5, tokens=2, experts=4)
    ids, gates = routers.spec_router(x, 2)
    with pytest.raises(TypeError, match="float32"):
        judge(x.astype(np.float64), ids, gates, 2)
    with pytest.raises(ValueError, match=r"\[2, 2\]"):
        judge(x, ids[:1], gates[:1], 2)
    with pytest.raises(ValueError, match="nearest|tie_order"):
        judge(x, ids, gates, 2, contract={"tie_ordre": "any"})
    with pytest.raises(ValueError, match="k must be"):
        judge(x, ids, gates, -1)


def test_torch_tensors_are_judged_as_numpy_arrays():
    torch = pytest.importorskip("torch")
    x = torch.from_numpy(batch(6, tokens=4, experts=16))
    gates, ids = torch.topk(torch.softmax(x, dim=-1), 2, dim=-1)  # int64 ids
    result = judge(x, ids, gates / gates.sum(-1, keepdim=True), 2,
                   contract={"tie_order": "any", "slot_order": "rank"})
    assert result.ok, str(result)
    bf16 = x.to(torch.bfloat16)  # widened exactly
    gates, ids = torch.topk(torch.softmax(bf16.float(), dim=-1), 2, dim=-1)
    assert judge(bf16, ids, gates / gates.sum(-1, keepdim=True), 2,
                 contract={"tie_order": "any"}).ok


def test_cuda_tensors_are_copied_to_the_host():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU (torch.cuda.is_available() is False)")
    x = torch.randn(8, 64, device="cuda")
    gates, ids = torch.topk(torch.softmax(x, dim=-1), 8, dim=-1)
    result = judge(x, ids, gates / gates.sum(-1, keepdim=True), 8, contract={"tie_order": "any"})
    assert len(result.verdicts) == 8


def test_the_package_says_its_version():
    assert moe_oracle.__version__.count(".") == 2
