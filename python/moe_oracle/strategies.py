"""Hypothesis strategies that draw the fuzzer's own routing cases.

``routing_cases()`` feeds bytes that Hypothesis draws to the campaign's generator
(``drawCase`` in fuzz/case/case.cpp, the one ``moe-oracle fuzz`` uses): exact ties, +0 and -0,
subnormals, +-inf, values around expf's overflow, near-ties one ulp apart, constant columns
across tokens, NaN in one case in 16, at adversarial shapes, with a batch split point. No
second generator: Hypothesis shrinks a failing case by shrinking the bytes, and bytes
shrink towards zeros, which the generator reads as the simplest choices (the smallest shape
of the space, k = 0, one token, logits +0).

    from hypothesis import given
    from moe_oracle import assert_routes
    from moe_oracle.strategies import routing_cases

    @given(routing_cases(experts="2-64", k="1-8"))
    def test_my_router(case):
        ids, gates = my_router(case.logits, case.k)
        assert_routes(case.logits, ids, gates, case.k, contract=MY_CONTRACT)
"""

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from . import _arrays, _core

# The shape (E, k, T) takes fewer bytes than the header (at most about 70); the rest feeds
# the first logits. A logit takes at most 5 bytes (an op byte and a u32). Each header byte
# is its own draw and the body comes in blocks of 16: Hypothesis shrinks draw by draw, so
# the shape shrinks byte by byte and a block of logits can go to zeros at once (one draw of
# thousands of bytes, shrunk as one big integer, hardly shrinks at all).
_HEADER_BYTES = 96
_BYTES_PER_LOGIT = 5
_BLOCK = 16
_MAX_BYTES = 4000  # Hypothesis: the simplest example within half its 8 KiB buffer


@dataclass(frozen=True, eq=False)
class RoutingCase:
    """One case: float32 ``logits`` [T, E], ``k``, and ``split`` in [0, T], a batch split
    point for batch-invariance checks (``case.logits[:case.split]``, ``[case.split:]``)."""

    logits: np.ndarray
    k: int
    split: int

    @property
    def tokens(self):
        return self.logits.shape[0]

    @property
    def experts(self):
        return self.logits.shape[1]

    def __repr__(self):
        # Python floats print the float32 values exactly (and round-trip through float32).
        return f"RoutingCase(k={self.k}, split={self.split}, logits={self.logits.tolist()!r})"


def routing_cases(experts="1-256", k=None, tokens="1-16", *, allow_nan=True, max_bytes=4000):
    """A strategy of RoutingCase drawn by the fuzzer's generator.

    ``experts``, ``k``, ``tokens``: the shapes, as ``moe_oracle.fuzz`` takes them (an int,
    "1-64,128", a range or a list); ``k=None`` draws k from 0 to E + 2 per case, as the
    command does. ``allow_nan=False`` turns the NaN of the out-of-domain cases into FLT_MAX
    (the generator's own replacement). ``max_bytes`` (at most 4,000) bounds the bytes drawn
    per case, about 780 logits' worth: logits past them read zero bytes, i.e. +0.
    Hypothesis's buffer is 8 KiB and its health check refuses a strategy whose simplest
    example takes more than half of it.
    """
    space = (_arrays.set_text(experts, "experts"), _arrays.set_text(k, "k"),
             _arrays.set_text(tokens, "tokens"))
    _core.draw_case(b"", *space)  # a bad shape set fails here, not inside a test
    if not _HEADER_BYTES <= max_bytes <= _MAX_BYTES:
        raise ValueError(f"max_bytes must be in [{_HEADER_BYTES}, {_MAX_BYTES}]")

    one_byte = st.binary(min_size=1, max_size=1)
    block = st.binary(min_size=_BLOCK, max_size=_BLOCK)

    @st.composite
    def draw(draw_bytes):
        header = b"".join(draw_bytes(one_byte) for _ in range(_HEADER_BYTES))
        shape = _core.draw_case(header, *space)[0].shape
        body = min(shape[0] * shape[1] * _BYTES_PER_LOGIT, max_bytes - _HEADER_BYTES)
        data = header + b"".join(draw_bytes(block) for _ in range(-(-body // _BLOCK)))
        logits, case_k, split, _, _, _ = _core.draw_case(data, *space)
        if not allow_nan:
            logits[np.isnan(logits)] = np.finfo(np.float32).max
        return RoutingCase(logits, case_k, split)

    return draw()
