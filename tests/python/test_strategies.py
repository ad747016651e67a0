"""moe_oracle.strategies: the fuzzer's generator under Hypothesis. Each special value the
issue names is drawn; a correct router passes every drawn case; a broken one is shrunk by
Hypothesis to the same small case the fuzzer's shrinker reports."""

import numpy as np
import pytest
import routers
from hypothesis import HealthCheck, find, given, settings

from moe_oracle import judge
from moe_oracle.strategies import RoutingCase, routing_cases

# Derandomized: where the shrinker stops is not guaranteed, so assertions on a shrunk case
# are reproducible only for a fixed search (as test_family.py's).
SEARCH = settings(max_examples=3000, database=None, deadline=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
TINY = np.finfo(np.float32).tiny


def row_has(case, test):
    return any(test(row) for row in case.logits)


def exact_tie(row):
    finite = row[np.isfinite(row) & (row != 0)]
    return len(np.unique(finite)) < len(finite)


def near_tie(row):
    values = np.unique(row[np.isfinite(row)])
    return bool(np.any(np.nextafter(values[:-1], np.float32(np.inf)) == values[1:]))


SPECIAL = {
    "+0 and -0 in one row": lambda r: np.any((r == 0) & np.signbit(r))
    and np.any((r == 0) & ~np.signbit(r)),
    "a subnormal": lambda r: np.any((r != 0) & (np.abs(r) < TINY)),
    "+inf": lambda r: np.any(r == np.inf),
    "-inf": lambda r: np.any(r == -np.inf),
    "NaN": lambda r: np.any(np.isnan(r)),
    "an exact tie of non-zero values": exact_tie,
    "a near-tie one ulp apart": near_tie,
    "beyond expf's overflow": lambda r: np.any((r > 88.72) & np.isfinite(r)),
}


@pytest.mark.parametrize("what", sorted(SPECIAL))
def test_each_special_value_is_drawn(what):
    # NaN comes only in the out-of-domain cases (1 in 16) and then from a raw bit pattern
    # (1 in ~1,000 logits), as in the fuzzer: wide rows find it within a few hundred cases.
    space = {"experts": "256", "tokens": "2-3"} if what == "NaN" else {"experts": "2-64"}
    case = find(routing_cases(**space), lambda c: row_has(c, SPECIAL[what]), settings=SEARCH)
    assert row_has(case, SPECIAL[what])


def test_batch_splits_and_k_beyond_e_are_drawn():
    split = find(routing_cases(), lambda c: 0 < c.split < c.tokens, settings=SEARCH)
    assert 0 < split.split < split.tokens
    wide_k = find(routing_cases(), lambda c: c.k > c.experts, settings=SEARCH)
    assert wide_k.k > wide_k.experts


@settings(max_examples=100, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(routing_cases(experts=[16, 48], k="1-3", tokens=range(2, 5)))
def test_cases_stay_in_the_shapes_asked_for(case):
    assert case.logits.dtype == np.float32 and case.logits.flags.c_contiguous
    assert case.experts in (16, 48) and 2 <= case.tokens <= 4 and 1 <= case.k <= 3
    assert 0 <= case.split <= case.tokens


@settings(max_examples=300, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(routing_cases(experts="256", tokens="2-3", allow_nan=False))
def test_allow_nan_false_draws_no_nan(case):
    assert not np.isnan(case.logits).any()


def test_a_shape_set_outside_the_limits_is_refused_at_once():
    with pytest.raises(ValueError, match="experts"):
        routing_cases(experts="9999")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(routing_cases(experts="1-64", tokens="1-8"))
def test_the_correct_router_passes_every_drawn_case(case):
    ids, gates = routers.spec_router(case.logits, case.k)
    result = judge(case.logits, ids, gates, case.k, contract=routers.CONTRACT)
    assert result.ok, str(result)


def test_hypothesis_shrinks_a_tie_bug_to_two_tied_experts():
    def broken(case):
        ids, gates = routers.tie_higher_index(case.logits, case.k)
        return not judge(case.logits, ids, gates, case.k, contract=routers.CONTRACT).ok

    case = find(routing_cases(experts="1-64", tokens="1-8"), broken, settings=SEARCH)
    assert isinstance(case, RoutingCase)
    assert (case.tokens, case.experts, case.k) == (1, 2, 1)
    assert case.logits[0, 0] == case.logits[0, 1]
    assert "RoutingCase(k=1" in repr(case)
