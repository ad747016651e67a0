"""dispatch_cases: a Hypothesis strategy of dispatch cases (moe_dispatch_v1's inputs), for
``assert_dispatch`` in a property test.

The cases are drawn with Hypothesis's own choices, so that it shrinks them choice by
choice, towards the first value of each shape set (the fewest experts, tokens and slots),
block 1, no capacity and empty slots. The choices follow what breaks dispatch kernels (the
campaign's generator, docs/fuzz.md "Cases"): slots piled on one or two hot experts,
experts with no slot, empty slots (-1), blocks that are powers of two and blocks that are
not, and capacities at, one below and one above the hottest expert's load.

    from hypothesis import given
    from moe_oracle import assert_dispatch
    from moe_oracle.strategies import dispatch_cases

    @given(dispatch_cases(experts="1-64", k="1-8", block=[16, 64]))
    def test_my_dispatch(case):
        out = my_dispatch(case.ids, case.k, case.experts, case.block, case.capacity)
        assert_dispatch(case.ids, *out, experts=case.experts, block=case.block,
                        capacity=case.capacity)
"""

import re
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from . import _arrays

_POWERS_OF_TWO = [2**i for i in range(1, 9)]
_RANGE = re.compile(r"^\s*(-?\d+)\s*(?:-\s*(-?\d+)\s*)?$")


def _ranges(values, what, lowest, highest):
    """A shape set (an int, "1-64,128", a range or a list) as [(lo, hi), ...] within
    [lowest, highest]; ValueError names the argument otherwise."""
    ranges = []
    for part in _arrays.set_text(values, what).split(","):
        match = _RANGE.match(part)
        if not match:
            raise ValueError(f"{what}: {part!r} is neither a value nor a range lo-hi")
        lo = int(match[1])
        hi = int(match[2]) if match[2] is not None else lo
        if not lowest <= lo <= hi <= highest:
            raise ValueError(f"{what}: {part!r} must lie in {lowest}..{highest}, low end first")
        ranges.append((lo, hi))
    return ranges


def _member(ranges):
    return st.one_of([st.integers(lo, hi) for lo, hi in ranges])


@dataclass(frozen=True, eq=False)
class DispatchCase:
    """One case: ``ids`` int32 [T, k] (-1 an empty slot), ``k``, ``experts``, ``block``,
    ``capacity`` (-1: no limit), as a dispatch function takes them."""

    ids: np.ndarray
    k: int
    experts: int
    block: int
    capacity: int

    @property
    def tokens(self):
        return self.ids.shape[0]

    def __repr__(self):
        return (f"DispatchCase(k={self.k}, experts={self.experts}, block={self.block}, "
                f"capacity={self.capacity}, ids={self.ids.tolist()!r})")


def _ids(draw, tokens, k, experts):
    """T * k ids: empty slots, any expert, or one of a few hot experts."""
    if experts == 0:
        return np.full((tokens, k), -1, np.int32)
    hot = draw(st.lists(st.integers(0, experts - 1), min_size=1, max_size=2))
    slot = st.one_of(st.just(-1), st.sampled_from(hot), st.integers(0, experts - 1))
    values = draw(st.lists(slot, min_size=tokens * k, max_size=tokens * k))
    return np.array(values, dtype=np.int32).reshape(tokens, k)


def _capacity(draw, ids, experts, capacity):
    if capacity is not None:
        return draw(_member(capacity))
    kept = ids[ids >= 0]
    most = int(np.bincount(kept, minlength=max(experts, 1)).max()) if kept.size else 0
    around = sorted({0, max(most - 1, 0), most, most + 1})
    return draw(st.one_of(st.just(-1), st.sampled_from(around), st.integers(0, most + 2)))


def dispatch_cases(experts="1-64", k="1-8", tokens="1-32", *, block=None, capacity=None):
    """A strategy of DispatchCase.

    ``experts``, ``k``, ``tokens``, ``block`` (1-256), ``capacity`` (-1 for no limit): the
    shape sets, as ``fuzz_dispatch`` takes them (an int, "1-64,128", a range or a list).
    ``block=None`` draws 1, the powers of two up to 256 and any value up to 256;
    ``capacity=None`` draws no limit, 0, and the values around the hottest expert's load.
    The ids are T * k draws each: keep T * k to a few thousand (Hypothesis's buffer).
    """
    experts_r = _ranges(experts, "experts", 0, 65536)
    k_r = _ranges(k, "k", 0, 65536)
    tokens_r = _ranges(tokens, "tokens", 0, 2**31 - 1)
    block_s = (st.one_of(st.just(1), st.sampled_from(_POWERS_OF_TWO), st.integers(1, 256))
               if block is None else _member(_ranges(block, "block", 1, 65536)))
    capacity_r = None if capacity is None else _ranges(capacity, "capacity", -1, 2**31 - 1)

    @st.composite
    def draw(draw_value):
        n_experts = draw_value(_member(experts_r))
        n_k = draw_value(_member(k_r))
        n_tokens = draw_value(_member(tokens_r))
        ids = _ids(draw_value, n_tokens, n_k, n_experts)
        return DispatchCase(ids, n_k, n_experts, draw_value(block_s),
                            _capacity(draw_value, ids, n_experts, capacity_r))

    return draw()
