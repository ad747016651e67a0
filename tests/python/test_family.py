"""The routing family (moe_route_v2) through the Python door: judge and assert_routes with
family=, fuzz on fn(logits, k, family) under a v2 contract. A correct DeepSeek-V3 style
router in NumPy passes; each planted bug is found with the kind that names it; parameters
outside route_abi.h's domain are a ValueError naming the field."""

import json
import subprocess
import sys

import family_routers as fr
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, find, given, settings

from moe_oracle import Unsupported, assert_routes, fuzz, judge
from moe_oracle.strategies import FamilyCase, family_cases

DEEPSEEK_V3 = {"score": "sigmoid", "groups": 8, "topk_groups": 4, "group_score": "top2_sum",
               "renormalize": True, "scale": 2.5}


def deepseek_batch(tokens=32, seed=3):
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 2, (tokens, 256)).astype(np.float32)
    bias = rng.uniform(-0.1, 0.1, 256).astype(np.float32)
    return logits, {**DEEPSEEK_V3, "bias": bias}


def test_a_correct_deepseek_v3_router_is_judged_ok_token_by_token():
    logits, family = deepseek_batch()
    ids, gates = fr.correct(logits, 8, family)
    result = assert_routes(logits, ids, gates, 8, fr.CONTRACT, family=family)
    assert result.ok and len(result.verdicts) == 32
    assert result.counts()["violation"] == 0


def test_the_gates_of_the_biased_keys_are_gate_bias_on_every_token():
    logits, family = deepseek_batch()
    ids, gates = fr.gate_bias(logits, 8, family)
    result = judge(logits, ids, gates, 8, fr.CONTRACT, family=family)
    assert not result.ok
    assert {v.kind for v in result.violations} == {"gate-bias"}
    assert len(result.violations) == 32  # every token judged, not only the first
    with pytest.raises(AssertionError, match="32 of 32 token.*gate-bias"):
        assert_routes(logits, ids, gates, 8, fr.CONTRACT, family=family)


# Group 0's best key is the largest, group 1's two keys are the larger sum: top-2 sums keep
# group 1, a max keeps group 0.
TWO_GROUPS = np.array([[3, -3, 2, 2, -5, -5, -5, -5]], np.float32)
TOP2 = {"score": "sigmoid", "groups": 4, "topk_groups": 1, "group_score": "top2_sum"}


def test_groups_scored_by_max_where_top2_sum_is_asked_is_kept_group():
    ids, gates = fr.correct(TWO_GROUPS, 2, TOP2)
    assert ids.tolist() == [[2, 3]]
    assert judge(TWO_GROUPS, ids, gates, 2, fr.CONTRACT, family=TOP2).ok
    ids, gates = fr.group_max(TWO_GROUPS, 2, TOP2)
    assert ids.tolist() == [[0, 1]]
    result = judge(TWO_GROUPS, ids, gates, 2, fr.CONTRACT, family=TOP2)
    assert [v.kind for v in result.violations] == ["kept-group"]


def test_a_group_tie_sent_to_the_higher_group_is_group_tie_order():
    logits = np.array([[1, 0, 1, 0, -5, -5, -5, -5]], np.float32)  # groups 0 and 1 equal
    family = {"score": "sigmoid", "groups": 4, "topk_groups": 1, "group_score": "max"}
    ids, gates = fr.correct(logits, 2, family)
    assert judge(logits, ids, gates, 2, fr.CONTRACT, family=family).ok
    ids, gates = fr.group_tie_higher(logits, 2, family)
    assert ids.tolist() == [[2, 3]]
    result = judge(logits, ids, gates, 2, fr.CONTRACT, family=family)
    assert [v.kind for v in result.violations] == ["group-tie-order"]
    # the contract may say ties go anywhere
    assert judge(logits, ids, gates, 2, {**fr.CONTRACT, "tie_order": "any"}, family=family).ok


def test_missing_keys_take_mixtrals_family_the_v1_routing():
    logits = np.array([[0.5, 2.0, -1.0, 1.0]], np.float32)
    ids, gates = fr.correct(logits, 2, {"score": "softmax", "bias": None, "groups": 1,
                                        "topk_groups": 1, "group_score": "max",
                                        "renormalize": True, "scale": 1.0})
    assert judge(logits, ids, gates, 2, family={}).ok
    assert judge(logits, ids, gates, 2).ok  # the v1 judge agrees
    assert not judge(logits, ids, gates * 2, 2, family={}).ok
    assert judge(logits, ids, gates * 2, 2, family={"scale": 2}).ok


def test_fewer_slots_than_k_when_groups_leave_fewer_eligible_experts():
    family = {"score": "sigmoid", "groups": 4, "topk_groups": 1}
    ids, gates = fr.correct(TWO_GROUPS, 3, family)
    assert ids.shape == (1, 2)  # min(k, eligible) = 2: accepted as they are, or padded
    assert judge(TWO_GROUPS, ids, gates, 3, family=family).ok
    padded_ids = np.concatenate([ids, [[-1]]], axis=1)
    padded_gates = np.concatenate([gates, [[0]]], axis=1).astype(np.float32)
    assert judge(TWO_GROUPS, padded_ids, padded_gates, 3, family=family).ok


@pytest.mark.parametrize("family, field", [
    ({"groups": 3}, "groups 3 does not divide 8"),
    ({"groups": 0}, "groups 0 < 1"),
    ({"groups": 4, "topk_groups": 5}, "topk_groups 5 outside 1..4"),
    ({"groups": 8, "group_score": "top2_sum"}, "top2-sum needs groups of 2"),
    ({"score": 2}, "score 2 is not MOE_SCORE_"),
    ({"score": "tanh"}, '"score" must be one of'),
    ({"renormalize": 2}, "renormalize 2 is not 0 or 1"),
    ({"scale": float("inf")}, "scale inf is not finite"),
    ({"bias": np.zeros(7, np.float32)}, "bias has 7 values for 8 experts"),
    ({"bias": np.zeros(8, np.float64)}, '"bias" must be float32'),
    ({"n_group": 8}, 'unknown key "n_group"'),
    ({"topk_group": 8}, 'did you mean "topk_groups"'),
])
def test_invalid_parameters_are_a_value_error_naming_the_field(family, field):
    logits = np.zeros((1, 8), np.float32)
    ids, gates = np.array([[0]]), np.array([[1.0]], np.float32)
    with pytest.raises(ValueError, match=field.replace("(", r"\(").replace(".", r"\.")):
        judge(logits, ids, gates, 1, family=family)


def test_a_v1_contract_with_a_family_is_refused_and_a_v2_one_without_is_mixtral():
    logits = np.array([[0.5, 2.0, -1.0, 1.0]], np.float32)
    ids, gates = fr.correct(logits, 2, {"score": "softmax", "bias": None, "groups": 1,
                                        "topk_groups": 1, "group_score": "max",
                                        "renormalize": True, "scale": 1.0})
    with pytest.raises(ValueError, match="moe_route_v2"):
        judge(logits, ids, gates, 2, {"abi": "moe_route_v1"}, family={})
    assert judge(logits, ids, gates, 2, {"abi": "moe_route_v2"}).ok
    assert not judge(logits, ids, gates * 2, 2, {"abi": "moe_route_v2"}).ok


def test_a_family_outside_the_contracts_families_is_a_value_error():
    logits, family = deepseek_batch(tokens=4)
    ids, gates = fr.correct(logits, 8, family)
    narrow = {"abi": "moe_route_v2",
              "families": {"scores": ["softmax"], "groups": False, "bias": False}}
    with pytest.raises(ValueError, match="families.scores"):
        judge(logits, ids, gates, 8, narrow, family=family)
    sigmoid_only = {**narrow, "families": {**narrow["families"], "scores": ["sigmoid"]}}
    with pytest.raises(ValueError, match='"groups": false'):
        judge(logits, ids, gates, 8, sigmoid_only, family=family)
    one_group = {**family, "groups": 1, "topk_groups": 1}
    ids1, gates1 = fr.correct(logits, 8, one_group)
    with pytest.raises(ValueError, match='"bias": false'):
        judge(logits, ids1, gates1, 8, sigmoid_only, family=one_group)
    plain = {**one_group, "bias": None}
    ids2, gates2 = fr.correct(logits, 8, plain)
    assert judge(logits, ids2, gates2, 8, sigmoid_only, family=plain).ok


def test_the_explanation_is_moe_oracle_explain_and_the_reproducer_replays(
        tmp_path, moe_oracle_bin):
    ids, gates = fr.group_max(TWO_GROUPS, 2, TOP2)
    result = judge(TWO_GROUPS, ids, gates, 2, fr.CONTRACT, family=TOP2)
    path = result.save(str(tmp_path / "kept-group.json"))
    with open(path, encoding="utf-8") as f:
        case = json.load(f)["testGroups"][0]["tests"][0]
    assert "family" in json.dumps(case)
    explain = subprocess.run([moe_oracle_bin, "explain", path], capture_output=True, text=True)
    assert explain.stdout == str(result)
    assert "kept-group" in str(result) and "sigmoid" in str(result)
    replay = subprocess.run([moe_oracle_bin, "replay", "--json", path], capture_output=True,
                            text=True)
    assert replay.returncode == 0 and json.loads(replay.stdout)["passed"] == 1, replay.stderr


def test_torch_tensors_as_logits_and_bias():
    torch = pytest.importorskip("torch")
    logits, family = deepseek_batch(tokens=4)
    ids, gates = fr.correct(logits, 8, family)
    torch_family = {**family, "bias": torch.from_numpy(family["bias"])}
    assert judge(torch.from_numpy(logits), torch.from_numpy(ids), torch.from_numpy(gates), 8,
                 family=torch_family).ok


# --- fuzz -------------------------------------------------------------------------------

SMALL = {"experts": "1-64", "tokens": "1-16"}


def run(fn, tmp_path, seconds=3, contract=fr.CONTRACT, **kwargs):
    return fuzz(fn, contract=contract, seconds=seconds, seed=11, out=str(tmp_path),
                shrink_seconds=3, **{**SMALL, **kwargs})


def test_a_correct_family_router_passes_a_short_fuzz(tmp_path):
    calls = []

    def spy(logits, k, family):
        calls.append(family)
        return fr.correct(logits, k, family)

    report = run(spy, tmp_path)
    assert report.exit_code == 0, str(report)
    assert report.tokens >= 1000 and report.verdicts["violation"] == 0
    # the families drawn: both scores, biases as float32 arrays, groups, invalid parameters
    assert {f["score"] for f in calls} >= {"softmax", "sigmoid"}
    assert any(f["bias"] is not None and f["bias"].dtype == np.float32 for f in calls)
    assert any(f["groups"] > 1 and f["group_score"] == "top2_sum" for f in calls)
    assert any(f["groups"] < 1 or f["score"] not in ("softmax", "sigmoid") for f in calls)


def test_the_contracts_families_limit_what_is_drawn(tmp_path):
    calls = []

    def spy(logits, k, family):
        calls.append((family, logits.shape[1]))
        return fr.correct(logits, k, family)

    contract = {**fr.CONTRACT, "families": {"scores": ["sigmoid"]}}
    report = run(spy, tmp_path, seconds=1, contract=contract, min_tokens=1)
    assert report.ok, str(report)
    valid = [f for f, experts in calls if is_valid(f, experts)]
    assert valid and all(f["score"] == "sigmoid" and f["bias"] is None and f["groups"] == 1
                         for f in valid)


def llama4_only(logits, k, family):
    """A fixed-recipe router: Llama 4's (sigmoid of the top-1 logit, raw, scale 1) and
    nothing else; invalid parameters still a ValueError first."""
    fr.check(family, logits.shape[1])
    llama4 = (family["score"] == "sigmoid" and family["bias"] is None and family["groups"] == 1
              and not family["renormalize"] and family["scale"] == 1.0 and k == 1)
    if not llama4:
        raise Unsupported("Llama 4's recipe only")
    return fr.correct(logits, k, family)


@pytest.mark.parametrize("how", [
    {"contract": {**fr.CONTRACT, "families": {
        "scores": ["sigmoid"], "groups": [1], "bias": False, "renormalize": [False],
        "scale": [1.0]}, "shapes": {"experts": [16, 128], "k": [1], "tokens": ["1-64"]}},
     "experts": None, "tokens": None},
    {"contract": {**fr.CONTRACT, "families": {"recipes": ["llama4"]}}},
    {"contract": fr.CONTRACT, "family": "llama4"},
])
def test_a_fixed_recipe_router_is_fuzzed_with_no_abstention(how, tmp_path):
    calls = []

    def spy(logits, k, family):
        calls.append(logits.shape)
        return llama4_only(logits, k, family)

    report = run(spy, tmp_path, seconds=2, **how)
    assert report.exit_code == 0, str(report)
    assert report.abstained == 0 and report.tokens >= 1000
    if "shapes" in how["contract"]:
        assert all(t >= 1 for t, _ in calls), "the contract's tokens exclude the empty batch"
    else:
        assert report.coverage["recipes"].get("llama4", 0) > report.tokens // 2
    assert all(e in (16, 128) for _, e in calls)


def test_recipes_and_restricted_fields_reach_the_draw_and_errors_name_them():
    with pytest.raises(ValueError, match="unknown recipe \"llama5\""):
        family_cases(recipes=["llama5"])
    with pytest.raises(ValueError, match="recipe deepseek-v3 routes at E = 256, k = 8"):
        family_cases(experts="1-64", recipes="deepseek-v3")
    with pytest.raises(ValueError, match="recipes"):
        both = {"recipes": ["mixtral"], "bias": True}
        fuzz(fr.correct, contract={**fr.CONTRACT, "families": both}, seconds=0.1)
    with pytest.raises(ValueError, match="no E of the shapes drawn"):
        fuzz(fr.correct, contract={**fr.CONTRACT, "families": {"groups": [7]}},
             experts="8-13", seconds=0.1)


def is_valid(family, experts):
    try:
        fr.check(family, experts)
        return True
    except ValueError:
        return False


# A group tie is also a key tie when the groups are of one expert (G = E), which the
# shrinker reaches and the verdict names tie-higher-index.
@pytest.mark.parametrize("router, kinds", [
    (fr.gate_bias, {"gate-bias"}),
    (fr.group_max, {"kept-group"}),
    (fr.group_tie_higher, {"group-tie-order", "tie-higher-index"}),
    (fr.accepts_bad_params, {"bad-params-accepted"}),
])
def test_each_family_bug_is_found_with_its_kind_and_replays(router, kinds, tmp_path,
                                                            moe_oracle_bin):
    report = run(router, tmp_path, seconds=20)
    assert report.exit_code == 1, str(report)
    (found,) = report["violations"]
    assert found["kind"] in kinds, str(report)
    assert found["signature"].startswith(
        f"moe-oracle: family_routers.{router.__name__}-{found['kind']}")
    done = subprocess.run([moe_oracle_bin, "replay", "--json", found["reproducer"]],
                          capture_output=True, text=True)
    assert done.returncode == 0 and json.loads(done.stdout)["passed"] == 1, done.stderr


def test_a_value_error_on_valid_parameters_is_an_exception_finding(tmp_path):
    def refuses_groups(logits, k, family):
        if family["groups"] > 1:
            raise ValueError("groups are not supported")
        return fr.correct(logits, k, family)

    report = run(refuses_groups, tmp_path, seconds=20)
    (found,) = report["violations"]
    assert found["kind"] == "exception" and found["signature"].endswith("ValueError")
    assert "groups are not supported" in str(report)


def test_the_family_reaches_a_torch_function_as_tensors(tmp_path):
    torch = pytest.importorskip("torch")
    seen = []

    def torch_route(logits, k, family):
        assert isinstance(logits, torch.Tensor)
        if family["bias"] is not None:
            seen.append(family["bias"])
            family = {**family, "bias": family["bias"].numpy()}
        return fr.correct(logits.numpy(), k, family)

    report = run(torch_route, tmp_path, seconds=1, min_tokens=1,
                 contract={**fr.CONTRACT, "array": "torch"})
    assert report.ok, str(report)
    assert seen and all(isinstance(b, torch.Tensor) and b.dtype == torch.float32 for b in seen)


# --- Hypothesis: moe_oracle.strategies.family_cases ---------------------------------------

# Searches for a given case are derandomized: where the shrinker stops is not guaranteed
# (one random run in about twenty left the gate-bias case at E = 9, nine groups of one, a
# local minimum), so the assertions on it would be flaky; a fixed search is reproducible.
SEARCH = settings(max_examples=2000, database=None, deadline=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
FIRST = settings(SEARCH, phases=[Phase.generate])  # the first case found, not shrunk


@settings(max_examples=150, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(family_cases(experts="1-64", tokens="1-8"))
def test_the_correct_router_passes_every_drawn_family_case(case):
    assert case.valid
    ids, gates = fr.correct(case.logits, case.k, case.family)
    result = judge(case.logits, ids, gates, case.k, fr.CONTRACT, family=case.family)
    assert result.ok, str(result)


@pytest.mark.parametrize("what, test", [
    ("sigmoid with a bias and top-2 sums",
     lambda c: c.family["score"] == "sigmoid" and c.family["bias"] is not None
     and c.family["group_score"] == "top2_sum" and c.family["groups"] > 1),
    ("k above the eligible experts",
     lambda c: c.family["groups"] > 1 and c.k > c.family["topk_groups"] * c.experts
     // c.family["groups"]),
    ("a scale other than 1 without renormalising",
     lambda c: c.family["scale"] != 1 and not c.family["renormalize"]),
    ("invalid parameters", lambda c: not c.valid),
])
def test_each_family_structure_is_drawn(what, test):
    case = find(family_cases(experts="1-16", tokens="1-4", allow_invalid=True), test,
                settings=FIRST)
    assert isinstance(case, FamilyCase) and "FamilyCase(k=" in repr(case)


def test_only_the_families_asked_for_are_drawn():
    @settings(max_examples=100, database=None, deadline=None)
    @given(family_cases(scores=["sigmoid"], groups=False, bias=False))
    def only_sigmoid(case):
        assert case.family["score"] == "sigmoid" and case.family["groups"] == 1
        assert case.family["bias"] is None

    only_sigmoid()
    with pytest.raises(ValueError, match="families.scores"):
        family_cases(scores=["tanh"])


def test_hypothesis_finds_and_shrinks_the_gate_bias_bug():
    def broken(case):
        ids, gates = fr.gate_bias(case.logits, case.k, case.family)
        return not judge(case.logits, ids, gates, case.k, fr.CONTRACT, family=case.family).ok

    case = find(family_cases(experts="1-16", tokens="1-4"), broken, settings=SEARCH)
    # a handful of experts (E = 1 in our runs: a softmax score 1, a key 1 + b)
    assert case.family["bias"] is not None and case.tokens == 1, repr(case)
    assert case.experts <= 4, repr(case)
    ids, gates = fr.gate_bias(case.logits, case.k, case.family)
    result = judge(case.logits, ids, gates, case.k, fr.CONTRACT, family=case.family)
    assert {v.kind for v in result.violations} <= {"gate-bias", "gate-nonfinite"}, str(result)


# --- python3 -m moe_oracle fuzz ------------------------------------------------------------

def test_the_command_line_fuzzes_a_family_function_under_a_v2_contract(
        tmp_path, env_with_package):
    done = subprocess.run(
        [sys.executable, "-m", "moe_oracle", "fuzz", "family_routers:group_max", "--seconds",
         "10", "--seed", "3", "--experts", "1-64", "--tokens", "1-16", "--shrink-seconds", "3",
         "--contract", json.dumps(fr.CONTRACT), "--out", str(tmp_path)],
        capture_output=True, text=True, env=env_with_package, cwd=tmp_path, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[-1] == "moe-oracle: family_routers.group_max-kept-group"
