"""Hypothesis strategies that draw the fuzzer's own routing cases.

``routing_cases()`` feeds bytes that Hypothesis draws to the campaign's generator
(``drawCase`` in fuzz/case/case.cpp, the one ``moe-oracle fuzz`` uses): exact ties, +0 and -0,
subnormals, +-inf, values around expf's overflow, near-ties one ulp apart, constant columns
across tokens, NaN in one case in 16, or logits drawn like a trained router's (Gaussian rows,
ties planted where they decide the routing), at the shapes of today's models, at kernel edges
and at degenerate shapes, with a batch split point. No second generator: Hypothesis shrinks a
failing case by shrinking the bytes, and bytes shrink towards zeros, which the generator reads
as the simplest choices (the smallest E of at least 2 in the space, k = 1, one token, logits
+0).

    from hypothesis import given
    from moe_oracle import assert_routes
    from moe_oracle.strategies import routing_cases

    @given(routing_cases(experts="2-64", k="1-8"))
    def test_my_router(case):
        ids, gates = my_router(case.logits, case.k)
        assert_routes(case.logits, ids, gates, case.k, contract=MY_CONTRACT)

``family_cases()`` does the same for the routing family (moe_route_v2): the campaign's
``drawFamilyCase`` adds the family's parameters and structures (tied groups, cancelling
and overturning biases, groups of one, k above the eligible experts, the shapes of today's
models) to the drawn logits.

``dispatch_cases()`` draws dispatch cases (moe_dispatch_v1's ids, block and capacity) for
``assert_dispatch``, with Hypothesis's own choices (``help(dispatch_cases)``).
"""

import json
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from . import _arrays, _core, _family
from ._dispatch_strategies import DispatchCase, dispatch_cases  # noqa: F401 (re-exported)

# The shape (E, k, T) takes fewer bytes than the header (at most about 70); the rest feeds
# the first logits. A logit takes at most 5 bytes (an op byte and a u32). Each header byte
# is its own draw and the body comes in blocks of 16: Hypothesis shrinks draw by draw, so
# the shape shrinks byte by byte and a block of logits can go to zeros at once (one draw of
# thousands of bytes, shrunk as one big integer, hardly shrinks at all).
_HEADER_BYTES = 96
_BYTES_PER_LOGIT = 5
_BLOCK = 16
_MAX_BYTES = 4000  # Hypothesis: the simplest example within half its 8 KiB buffer
_FAMILY_BYTES = 64  # the family's choices after the logits (its bias: 2 bytes an expert)


def _shape_space(experts, k, tokens, max_bytes):
    """The shape sets as ``_core`` takes them; ``max_bytes`` checked."""
    if not _HEADER_BYTES <= max_bytes <= _MAX_BYTES:
        raise ValueError(f"max_bytes must be in [{_HEADER_BYTES}, {_MAX_BYTES}]")
    return (_arrays.set_text(experts, "experts"), _arrays.set_text(k, "k"),
            _arrays.set_text(tokens, "tokens"))


_ONE_BYTE = st.binary(min_size=1, max_size=1)
_BLOCK_OF_BYTES = st.binary(min_size=_BLOCK, max_size=_BLOCK)


def _draw_input(draw_bytes, space, max_bytes, body_bytes):
    """The generator's input: the header byte by byte, then ``body_bytes(tokens, experts)``
    of the shape the header decodes to, in blocks, within ``max_bytes`` in all."""
    header = b"".join(draw_bytes(_ONE_BYTE) for _ in range(_HEADER_BYTES))
    tokens, experts = _core.draw_case(header, *space)[0].shape
    body = min(body_bytes(tokens, experts), max_bytes - _HEADER_BYTES)
    return header + b"".join(draw_bytes(_BLOCK_OF_BYTES) for _ in range(-(-body // _BLOCK)))


class _Shape:
    """The shape of a case's ``logits`` [T, E], for RoutingCase and FamilyCase."""

    @property
    def tokens(self):
        return self.logits.shape[0]

    @property
    def experts(self):
        return self.logits.shape[1]


@dataclass(frozen=True, eq=False)
class RoutingCase(_Shape):
    """One case: float32 ``logits`` [T, E], ``k``, and ``split`` in [0, T], a batch split
    point for batch-invariance checks (``case.logits[:case.split]``, ``[case.split:]``)."""

    logits: np.ndarray
    k: int
    split: int

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
    space = _shape_space(experts, k, tokens, max_bytes)
    _core.draw_case(b"", *space)  # a bad shape set fails here, not inside a test

    @st.composite
    def draw(draw_bytes):
        data = _draw_input(draw_bytes, space, max_bytes,
                           lambda tokens_, experts_: tokens_ * experts_ * _BYTES_PER_LOGIT)
        logits, case_k, split, _, _, _ = _core.draw_case(data, *space)
        if not allow_nan:
            logits[np.isnan(logits)] = np.finfo(np.float32).max
        return RoutingCase(logits, case_k, split)

    return draw()


@dataclass(frozen=True, eq=False)
class FamilyCase(_Shape):
    """One routing-family case: float32 ``logits`` [T, E], ``k``, ``split`` and ``family``,
    the dict ``judge(..., family=)`` takes and a v2 function receives (the bias a float32
    array or None)."""

    logits: np.ndarray
    k: int
    split: int
    family: dict

    @property
    def valid(self):
        """The parameters are within route_abi.h's domain (else the router owes ValueError)."""
        return not _family.check(_family.raw(self.family), self.experts)[0]

    def __repr__(self):
        family = {**self.family, "bias": None if self.family["bias"] is None
                  else self.family["bias"].tolist()}
        return (f"FamilyCase(k={self.k}, split={self.split}, family={family!r}, "
                f"logits={self.logits.tolist()!r})")


def _families(scores, groups, bias, topk_groups, group_score, renormalize, scale, recipes):
    """The contract's "families" object of family_cases' arguments."""
    if recipes is not None:
        return {"recipes": [recipes] if isinstance(recipes, str) else list(recipes)}
    families = {"scores": list(scores),
                "groups": groups if isinstance(groups, bool) else list(groups),
                "bias": bias if bias == "required" else bool(bias)}
    for key, value in (("topk_groups", topk_groups), ("group_score", group_score),
                       ("renormalize", renormalize), ("scale", scale)):
        if value is not None:
            families[key] = list(value)
    return families


def family_cases(experts="1-64", k=None, tokens="1-16", *, scores=("softmax", "sigmoid"),
                 groups=True, bias=True, topk_groups=None, group_score=None, renormalize=None,
                 scale=None, recipes=None, allow_invalid=False, allow_nan=True, max_bytes=4000):
    """A strategy of FamilyCase drawn by the fuzzer's family generator (drawFamilyCase).

    ``scores``, ``groups`` (a bool or the group counts), ``bias`` (a bool or "required"),
    ``topk_groups``, ``group_score``, ``renormalize``, ``scale`` (lists; None: free): what
    the router supports, as a v2 contract's ``"families"`` says; only those are drawn.
    ``recipes`` (names such as "deepseek-v3", or a list) instead draws the model recipes,
    each at its shapes (E, k), which ``experts`` and ``k`` must then hold.
    ``allow_invalid=True`` keeps the cases with parameters outside route_abi.h's domain (1 in
    16; ``case.valid`` is False: the router owes a ValueError); a short struct_size, which a
    Python function cannot be given, is never kept. The rest as ``routing_cases``: the
    family's bytes (its parameters, one bias value per expert) are read after the logits'
    and count within ``max_bytes``.
    """
    space = _shape_space(experts, k, tokens, max_bytes)
    contract = json.dumps({"abi": "moe_route_v2",
                           "families": _families(scores, groups, bias, topk_groups, group_score,
                                                 renormalize, scale, recipes)})
    _core.draw_family_case(b"", *space, contract)  # a bad shape set or family fails here

    @st.composite
    def draw(draw_bytes):
        # The logits', then the family's parameters and one bias value (2 bytes) an expert.
        data = _draw_input(draw_bytes, space, max_bytes,
                           lambda tokens_, experts_: (tokens_ * experts_ * _BYTES_PER_LOGIT
                                                      + _FAMILY_BYTES + 2 * experts_))
        logits, case_k, split, raw = _core.draw_family_case(data, *space, contract)
        if not allow_nan:
            logits[np.isnan(logits)] = np.finfo(np.float32).max
        return FamilyCase(logits, case_k, split, _family.to_dict(raw)), raw[7]

    def keep(drawn):
        case, struct_short = drawn
        return struct_short == 0 and (allow_invalid or case.valid)

    return draw().filter(keep).map(lambda drawn: drawn[0])


@dataclass(frozen=True, eq=False)
class LayerCase:
    """One fused-layer case: float32 ``x`` [T, H], ``logits`` [T, E], ``w13`` [E, 2I, H],
    ``w2`` [E, H, I], ``k``, ``dtype`` ("f32", or "bf16": every value of x and the weights
    is a bf16 value, widened), ``family`` (a dict as ``judge_layer`` takes it, or None for
    softmax top-k renormalised), and what the generator drew: ``style`` of the values
    ("uniform", "cancelling", "huge", "tiny", "bf16-edges", "sparse") and ``shape`` (a model's
    name, or "small")."""

    x: np.ndarray
    logits: np.ndarray
    w13: np.ndarray
    w2: np.ndarray
    k: int
    dtype: str
    family: dict
    style: str
    shape: str

    def __repr__(self):
        return (f"LayerCase(T={self.x.shape[0]}, H={self.x.shape[1]}, I={self.w2.shape[2]}, "
                f"E={self.logits.shape[1]}, k={self.k}, dtype={self.dtype!r}, "
                f"style={self.style!r}, shape={self.shape!r}, family={self.family!r})")


def layer_cases(tokens="1-8", k=None, experts="1-16", hidden=None, intermediate=None, *,
                dtype=("f32",), families=None, max_weights=1 << 14, max_bytes=1024):
    """A strategy of LayerCase drawn by the layer door's generator (drawLayerCase, the one
    ``moe-oracle fuzz`` uses on a moe_layer_v1 library): real models' H (a multiple of 64 and
    one off it) and I cut to ``max_weights`` binary32 weights (E first, then I, then H), or
    small shapes; cancelling weights, huge and tiny magnitudes, bf16 edge values, sparse
    weights, logits with exact and one-ulp ties.

    ``tokens``, ``k``, ``experts``, ``hidden``, ``intermediate``: the shapes, as
    ``fuzz_layer`` takes them (None: the generator's own; k up to 10). ``dtype``: the input
    types the layer takes ("f32", "bf16"). ``families``: a contract's ``"families"`` object to
    draw routing families from (None: softmax top-k renormalised). Hypothesis shrinks a case
    by shrinking the bytes; bytes past ``max_bytes`` read as zeros (the simplest choices).
    """
    fields = {"abi": "moe_layer_v1", "dtype": list(dtype)}
    if families is not None:
        fields["families"] = families
    contract = json.dumps(fields)
    space = (_arrays.set_text(tokens, "tokens"), _arrays.set_text(k, "k"),
             _arrays.set_text(experts, "experts"), _arrays.set_text(hidden, "hidden"),
             _arrays.set_text(intermediate, "intermediate"))
    _core.draw_layer_case(b"", contract, *space, int(max_weights))  # bad sets fail here

    @st.composite
    def draw(draw_bytes):
        data = b"".join(draw_bytes(_BLOCK_OF_BYTES) for _ in range(max_bytes // _BLOCK))
        x, logits, w13, w2, case_k, case_dtype, raw, style, shape = _core.draw_layer_case(
            data, contract, *space, int(max_weights))
        family = None if raw is None else _family.to_dict(raw)
        return LayerCase(x, logits, w13, w2, case_k, case_dtype, family, style, shape)

    return draw()
