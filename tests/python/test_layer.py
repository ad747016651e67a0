"""The layer door from Python: judge_layer / assert_layer on a NumPy layer's output, and
fuzz_layer on Python layers: a correct one passes, broken ones are found with their kind and
a shrunk reproducer that `moe-oracle replay` reads, an exception is a finding, Unsupported
an abstention; layer_cases draws the command's layer cases for Hypothesis."""

import json
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings

from moe_oracle import Unsupported, assert_layer, fuzz_layer, judge_layer
from moe_oracle.strategies import layer_cases

SMALL = {"tokens": "1-8", "experts": "1-16", "hidden": "1-96", "intermediate": "1-48"}


def softmax_topk(logits, k, dtype=np.float32):
    """Softmax top-k renormalised in ``dtype``, ties to the lower index (a stable sort). In
    float64 a layer orders experts that tie in binary32 by their exact probabilities: another
    acceptable routing, which the verdict must find among its candidates when no routing is
    returned (docs/fuzz.md, "The fused layer")."""
    z = logits.astype(dtype)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True, dtype=dtype)
    ids = np.argsort(-p, axis=1, kind="stable")[:, :k]
    g = np.take_along_axis(p, ids, axis=1)
    g /= g.sum(axis=1, keepdims=True, dtype=dtype)
    return ids.astype(np.int32), g.astype(np.float32)


def experts_out(x, w13, w2, e):
    """W2 (silu(W1 x) * (W3 x)) of expert e for every token, in float32."""
    inter = w2.shape[2]
    a = x @ w13[e, :inter].T
    b = x @ w13[e, inter:].T
    h = (a / (np.float32(1) + np.exp(-a))) * b
    return h @ w2[e].T


def make_layer(bug=None, routed=False, ranking=np.float32):
    def layer(x, logits, w13, w2, k, family):
        assert family is None
        ids, gates = softmax_topk(logits, k, ranking)
        y = np.zeros(x.shape, np.float32)
        for t in range(x.shape[0]):
            for s in range(ids.shape[1]):
                e = ids[t, s]
                out = experts_out(x[t:t + 1], w13, w2, e)[0]
                times = 2 if bug == "double" and s == 0 else 1
                for _ in range(times):
                    y[t] += gates[t, s] * out
        return (y, ids, gates) if routed else y
    return layer


def numpy_case(seed, T=3, H=16, inter=8, E=6, k=2):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (T, H)).astype(np.float32)
    logits = rng.normal(0, 2, (T, E)).astype(np.float32)
    w13 = (rng.uniform(-1, 1, (E, 2 * inter, H)) / np.sqrt(H)).astype(np.float32)
    w2 = (rng.uniform(-1, 1, (E, H, inter)) / np.sqrt(inter)).astype(np.float32)
    return x, logits, w13, w2, k


def test_judge_layer_passes_a_correct_output_and_names_a_planted_error():
    x, logits, w13, w2, k = numpy_case(1)
    y, ids, gates = make_layer(routed=True)(x, logits, w13, w2, k, None)
    assert judge_layer(x, logits, w13, w2, k, y).ok
    result = assert_layer(x, logits, w13, w2, k, y, ids, gates)
    assert result.ok and len(result.verdicts) == 3
    bad = y.copy()
    bad[1, 5] += 0.25
    with pytest.raises(AssertionError, match="violate") as caught:
        assert_layer(x, logits, w13, w2, k, bad, ids, gates)
    assert "token 1, coordinate 5" in str(caught.value)
    twice = make_layer("double")(x, logits, w13, w2, k, None)
    verdict = judge_layer(x, logits, w13, w2, k, twice, ids, gates)
    assert not verdict.ok and verdict.violations[0]["token"] == 0


def test_judge_layer_checks_the_shapes():
    x, logits, w13, w2, k = numpy_case(2)
    y = make_layer()(x, logits, w13, w2, k, None)
    with pytest.raises(ValueError, match="w2 must be"):
        judge_layer(x, logits, w13, w2[:, :, :-1], k, y)
    with pytest.raises(ValueError, match="y must be"):
        judge_layer(x, logits, w13, w2, k, y[:, :-1])
    with pytest.raises(TypeError, match="float32"):
        judge_layer(x.astype(np.float64), logits, w13, w2, k, y)


def test_a_saved_reproducer_replays(tmp_path, moe_oracle_bin):
    x, logits, w13, w2, k = numpy_case(3)
    y = make_layer("double")(x, logits, w13, w2, k, None)
    result = judge_layer(x, logits, w13, w2, k, y)
    assert not result.ok
    path = result.save(str(tmp_path / "layer.json"))
    done = subprocess.run([moe_oracle_bin, "replay", path], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_fuzz_layer_passes_a_correct_layer(tmp_path):
    for routed in (False, True):
        report = fuzz_layer(make_layer(routed=routed), seconds=4, seed=5, out=str(tmp_path),
                            min_tokens=40, **SMALL)
        assert report.exit_code == 0, str(report)
        assert report.violations == [] and report.tokens >= 40


def test_a_layer_that_ranks_in_float64_passes_without_returning_its_routing(tmp_path):
    report = fuzz_layer(make_layer(ranking=np.float64), seconds=4, seed=5, out=str(tmp_path),
                        min_tokens=40, **SMALL)
    assert report.exit_code == 0, str(report)


def test_fuzz_layer_finds_a_double_counted_expert_and_shrinks_it(tmp_path, moe_oracle_bin):
    report = fuzz_layer(make_layer("double"), seconds=10, seed=5, out=str(tmp_path), **SMALL)
    assert report.exit_code == 1, str(report)
    finding = report.violations[0]
    assert finding["kind"] == "extra-expert", str(report)
    with open(finding["reproducer"], encoding="utf-8") as f:
        case = json.load(f)["testGroups"][0]["tests"][0]["case"]
    assert case["tokens"] == 1
    done = subprocess.run([moe_oracle_bin, "replay", finding["reproducer"]],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_an_exception_is_a_finding_and_unsupported_abstains(tmp_path):
    def raises(x, logits, w13, w2, k, family):
        raise RuntimeError("boom")

    report = fuzz_layer(raises, seconds=2, seed=1, out=str(tmp_path), **SMALL)
    assert report.exit_code == 1 and report.violations[0]["kind"] == "exception"
    assert "RuntimeError" in report.violations[0]["signature"]

    def unsupported(x, logits, w13, w2, k, family):
        raise Unsupported()

    report = fuzz_layer(unsupported, seconds=1, seed=1, out=str(tmp_path), **SMALL)
    assert report.exit_code == 3 and report.abstained == report.cases > 0


@settings(max_examples=25, deadline=None)
@given(layer_cases(tokens="1-4", experts="1-8", hidden="1-64", intermediate="1-32"))
def test_layer_cases_feed_a_correct_layer_that_passes(case):
    assert case.x.shape[1] == case.w13.shape[2] and case.w2.shape[0] == case.logits.shape[1]
    y = make_layer()(case.x, case.logits, case.w13, case.w2, case.k, None)
    if not np.all(np.isfinite(case.logits)):
        return  # a row the routing cannot rank: the NumPy layer is not its judge's subject
    assert_layer(case.x, case.logits, case.w13, case.w2, case.k, y)
