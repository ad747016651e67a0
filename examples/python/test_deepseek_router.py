"""DeepSeek-V3's grouped_topk tested with moe-oracle's routing family: run with

    PYTHONPATH=build/python python3 -m pytest examples/python

MOE_ROUTER names another function of deepseek_router to test (tests/python/test_examples.py
checks that the buggy one fails here, with the oracle's explanation)."""

import os

import pytest

torch = pytest.importorskip("torch")  # Debian: python3-torch

import deepseek_router  # noqa: E402
from moe_oracle import assert_routes, fuzz  # noqa: E402

route = getattr(deepseek_router, os.environ.get("MOE_ROUTER", "route"))
CONTRACT = deepseek_router.CONTRACT


def test_a_deepseek_v3_batch():
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(64, 256, generator=generator) * 2
    bias = (torch.rand(256, generator=generator) - 0.5) * 0.2
    family = {**deepseek_router.DEEPSEEK_V3, "bias": bias}
    ids, gates = route(logits, 8, family)
    assert_routes(logits, ids, gates, 8, contract=CONTRACT, family=family)


def test_tied_groups_and_saturated_sigmoids():
    # groups 0 and 1 equal (any of them may be kept: tie_order any), logits where binary32's
    # sigmoid is 1
    row = [1.0, 0.5, 1.0, 0.5, -3.0, -3.0, -3.0, -3.0, 17.0, 18.0, 16.9, -1.0]
    logits = torch.tensor([row, [20.0] * 12])
    family = {"score": "sigmoid", "bias": None, "groups": 6, "topk_groups": 2,
              "group_score": "top2_sum", "renormalize": True, "scale": 2.5}
    ids, gates = route(logits, 3, family)
    assert_routes(logits, ids, gates, 3, contract=CONTRACT, family=family)


def test_a_short_fuzz_run(tmp_path):
    report = fuzz(route, seconds=3, seed=3, out=str(tmp_path), experts="1-256", tokens="1-16",
                  shrink_seconds=3)
    assert report.ok, str(report)
