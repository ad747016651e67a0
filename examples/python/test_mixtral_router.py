"""The Mixtral router's tests, with moe-oracle where torch.testing.assert_close against a
float32 reference would be: run with

    PYTHONPATH=build/python python3 -m pytest examples/python

MOE_ROUTER names another function of mixtral_router to test (tests/python/test_examples.py
checks that each buggy one fails here, with the oracle's explanation)."""

import os

import pytest

torch = pytest.importorskip("torch")  # Debian: python3-torch
from hypothesis import HealthCheck, given, settings  # noqa: E402

import mixtral_router  # noqa: E402
from moe_oracle import assert_routes  # noqa: E402
from moe_oracle.strategies import routing_cases  # noqa: E402

route = getattr(mixtral_router, os.environ.get("MOE_ROUTER", "route"))
CONTRACT = mixtral_router.CONTRACT


def test_a_batch_of_random_logits():
    logits = torch.randn(64, 8, generator=torch.Generator().manual_seed(0))
    ids, gates = route(logits, 2)
    assert_routes(logits, ids, gates, 2, contract=CONTRACT)


def test_exact_ties_and_signed_zeros():
    logits = torch.tensor([[0.0, -0.0, 0.0, -1.0], [2.0, 2.0, 2.0, 2.0], [1.0, 3.0, 3.0, -5.0]])
    ids, gates = route(logits, 2)
    assert_routes(logits, ids, gates, 2, contract=CONTRACT)


# The fuzzer's own cases (ties, +0/-0, subnormals, infinities, near-ties), shrunk by
# Hypothesis when one fails.
@settings(max_examples=200, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(routing_cases(experts="1-64", k="1-8", tokens="1-16"))
def test_every_drawn_case(case):
    logits = torch.from_numpy(case.logits)
    ids, gates = route(logits, case.k)
    assert_routes(logits, ids, gates, case.k, contract=CONTRACT)
