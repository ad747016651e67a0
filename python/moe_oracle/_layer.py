"""The layer door: a fused MoE layer's output judged (judge_layer, assert_layer) and a
Python layer fuzzed with the command's layer campaign (fuzz_layer).

A layer takes x [T, H], the router's logits [T, E], w13 [E, 2I, H] (each expert's W1 rows,
then its W3 rows) and w2 [E, H, I], and returns y [T, H] = sum over the kept experts of
gate * W2 (silu(W1 x) * (W3 x)), with the routing of the contract (softmax top-k
renormalised, or a routing family). The verdict is the command's (docs/fuzz.md, "The fused
layer"): y within a derived binary32 budget of the spec's sparse forward.
"""

import json
import numbers
import random

import numpy as np

from . import _arrays, _contract, _core, _family
from ._fuzz import FuzzReport, Unsupported

DTYPES = ("f32", "bf16")


def _layer_contract(text):
    """A contract that names no ABI becomes the layer's; one that names another is refused."""
    fields = json.loads(text)
    abi = fields.setdefault("abi", "moe_layer_v1")
    if abi != "moe_layer_v1":
        raise ValueError(f'a layer\'s contract has "abi": "moe_layer_v1"; this one says {abi!r}')
    return json.dumps(fields)


def _float32(a, what, ndim):
    """``a`` as C-contiguous float32 with ``ndim`` dimensions (bfloat16 and float16 widened
    exactly; float64 refused: rounding it here would judge values the layer never saw)."""
    h = _arrays.host(a, what)
    if h.dtype.kind != "f" or h.dtype.itemsize > 4:
        raise TypeError(f"{what} must be float32 (or bfloat16 / float16, widened exactly); got "
                        f"{h.dtype}")
    if h.ndim != ndim:
        raise ValueError(f"{what} must have {ndim} dimensions; got shape {tuple(h.shape)}")
    return np.ascontiguousarray(h, dtype=np.float32)


def _is_bf16(a):
    return type(a).__module__.split(".")[0] == "torch" and str(a.dtype) == "torch.bfloat16"


def _inputs(x, logits, w13, w2, k):
    """The case's arrays and its shape (T, H, I, E, k), every shape checked."""
    if not isinstance(k, numbers.Integral) or isinstance(k, bool) or k < 0:
        raise ValueError(f"k must be an int >= 0; got {k!r}")
    xs = _float32(x, "x", 2)
    ls = _float32(logits, "logits", 2)
    w13s = _float32(w13, "w13", 3)
    w2s = _float32(w2, "w2", 3)
    T, H = xs.shape
    E = ls.shape[1]
    if ls.shape[0] != T:
        raise ValueError(f"logits must be [T, E] with T = {T} (x's); got {tuple(ls.shape)}")
    if w13s.shape[0] != E or w13s.shape[2] != H or w13s.shape[1] % 2:
        raise ValueError(f"w13 must be [E, 2I, H] = [{E}, 2I, {H}]; got {tuple(w13s.shape)}")
    inter = w13s.shape[1] // 2
    if w2s.shape != (E, H, inter):
        raise ValueError(f"w2 must be [E, H, I] = [{E}, {H}, {inter}]; got {tuple(w2s.shape)}")
    return (xs, ls, w13s, w2s), (T, H, inter, E, int(k))


class LayerJudgeResult:
    """The layer verdict for one call.

    ``ok``: no token is a violation. ``verdicts``: one dict per token judged (``token``,
    ``outcome`` exact / acceptable / violation, ``reason``, ``kind``, ``expert``,
    ``coordinate``, ``certificate``, ``margin``: the worst |y - ref| / budget), until the
    first violation. ``str(result)``: the report of that violation. ``save(path)`` writes its
    reproducer, which ``moe-oracle replay`` and ``explain`` read.
    """

    def __init__(self, answer):
        self.verdicts = [dict(v) for v in answer["verdicts"]]
        self.violations = [v for v in self.verdicts if v["outcome"] == "violation"]
        self.report = answer["report"]
        self.reproducer = answer["reproducer"] or None

    @property
    def ok(self):
        return not self.violations

    def save(self, path):
        if self.reproducer is None:
            raise ValueError("no violation: there is no reproducer to save")
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.reproducer + "\n")
        return path

    def __str__(self):
        return self.report or f"{len(self.verdicts)} token(s), no violation"

    def __repr__(self):
        kinds = sorted({v["kind"] for v in self.violations})
        return f"LayerJudgeResult(ok={self.ok}, tokens={len(self.verdicts)}, violations={kinds})"


def judge_layer(x, logits, w13, w2, k, y, ids=None, gates=None, *, family=None, contract=None,
                dtype=None, name=None):
    """Judges a fused layer's output y [T, H] against the spec's sparse forward.

    ``ids`` and ``gates`` ([T, k] or [T, min(k, E)]): the routing the layer used, judged
    first by the router verdict, then y over it; without them y must fit some routing the
    router verdict accepts (near-ties give a few). ``family``: a routing family dict as
    ``judge`` takes it (default: softmax top-k renormalised). ``dtype``: "bf16" when x and
    the weights were bf16 (torch bfloat16 tensors say so themselves; their values are
    widened exactly); "f32" otherwise. ``contract``: the layer's promises (``budget_factor``,
    ``silu_ulp``, the routing fields), a dict or JSON text.
    """
    text, _, contract_name = _contract.split(contract)
    text = _layer_contract(text)
    if dtype is None:
        dtype = "bf16" if all(_is_bf16(a) for a in (x, w13, w2)) else "f32"
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}; got {dtype!r}")
    arrays, shape = _inputs(x, logits, w13, w2, k)
    T, H, _, E, k = shape
    ys = _float32(y, "y", 2)
    if ys.shape != (T, H):
        raise ValueError(f"y must be [T, H] = [{T}, {H}]; got {tuple(ys.shape)}")
    raw = None
    kept = None
    if family is not None:
        raw = _family.raw(family)
        invalid, eligible = _family.check(raw, E)
        if invalid:
            raise ValueError(f"family: {invalid}")
        kept = min(k, eligible)
    ids32 = gates32 = None
    if ids is not None or gates is not None:
        if ids is None or gates is None:
            raise ValueError("ids and gates go together: give both or neither")
        ids32, gates32 = _arrays.slots(ids, gates, T, E, k, kept=kept)
    answer = _core.judge_layer(*arrays, shape, dtype, raw, ys, ids32, gates32, text,
                               name or contract_name or "layer")
    return LayerJudgeResult(answer)


def assert_layer(x, logits, w13, w2, k, y, ids=None, gates=None, **kwargs):
    """As ``judge_layer``, and raises AssertionError with the report when a token is a
    violation; returns the LayerJudgeResult otherwise. One line where a kernel's test had
    ``torch.testing.assert_close(y, reference, atol=2e-2)``."""
    __tracebackhide__ = True
    result = judge_layer(x, logits, w13, w2, k, y, ids, gates, **kwargs)
    if not result.ok:
        kinds = ", ".join(sorted({v["kind"] for v in result.violations}))
        raise AssertionError(f"the layer's output violates the spec ({kinds}):\n{result.report}")
    return result


def _call_for(fn, array):
    """What the C++ campaign calls: the case's arrays in the contract's array type (torch
    bfloat16 tensors for a bf16 case under "array": "torch"), the function's answer brought
    to (y float32 [T, H], ids int32 [T, k] or None, gates float32 [T, k] or None)."""
    torch = None
    if array == "torch":
        import torch  # only when asked

    def convert(a, dtype):
        if torch is None:
            return a
        t = torch.from_numpy(a)
        return t.to(torch.bfloat16) if dtype == "bf16" else t

    def call(x, logits, w13, w2, k, raw_family, dtype):
        family = None if raw_family is None else _family.to_dict(raw_family, array)
        out = fn(convert(x, dtype), convert(logits, "f32"), convert(w13, dtype),
                 convert(w2, dtype), k, family)
        T, H = x.shape
        E = logits.shape[1]
        if isinstance(out, tuple):
            if len(out) != 3:
                raise TypeError(f"the function must return y or (y, ids, gates); it returned a "
                                f"tuple of {len(out)}")
            y, ids, gates = out
            kept = None
            if raw_family is not None:
                kept = min(k, _family.check(raw_family, E)[1])
            ids32, gates32 = _arrays.slots(ids, gates, T, E, k, kept=kept)
        else:
            y, ids32, gates32 = out, None, None
        ys = _float32(y, "y", 2)
        if ys.shape != (T, H):
            raise ValueError(f"y must be [T, H] = [{T}, {H}]; got {tuple(ys.shape)}")
        return ys, ids32, gates32

    return call


def fuzz_layer(fn, contract=None, seconds=60, seed=None, out=None, keep_going=False, tokens=None,
               k=None, experts=None, hidden=None, intermediate=None, *, family=None,
               shrink_seconds=10, min_tokens=1000, max_cases=0, progress=False, name=None):
    """Fuzzes a layer ``fn(x, logits, w13, w2, k, family) -> y or (y, ids, gates)`` with the
    command's layer generator, verdict and shrinker; returns a FuzzReport.

    The arrays are fresh float32 NumPy arrays each call (torch tensors with
    ``"array": "torch"`` in the contract; bfloat16 ones for a bf16 case), ``family`` None
    (softmax top-k renormalised) or a dict as ``judge`` takes it (drawn when the contract
    lists ``"families"`` or ``family=`` names recipes). The shapes: real models' H (a
    multiple of 64 and one off it) and I, E up to 256, k up to 10, T up to 4,096 as the time
    allows, or the lists given (``tokens``, ``k``, ``experts``, ``hidden``, ``intermediate``).
    bf16 cases are drawn when the contract's ``"dtype"`` lists "bf16". An exception from
    ``fn`` is a finding of kind ``exception``; ``Unsupported`` abstains; violations are shrunk
    and written to ``out`` as reproducers ``moe-oracle replay`` reads.
    """
    text, array, contract_name = _contract.split(contract, fn)
    text = _layer_contract(text)
    if seed is None:
        seed = random.SystemRandom().randrange(2**32)
    if family is not None and not isinstance(family, str):
        family = ",".join(family)
    answer = _core.fuzz_layer(
        _call_for(fn, array), Unsupported, name or contract_name or _contract.name_of(fn), text,
        seconds=float(seconds), seed=int(seed), max_cases=int(max_cases),
        out=out or None, keep_going=bool(keep_going),
        shrink_seconds=float(shrink_seconds), min_tokens=int(min_tokens),
        progress=bool(progress), tokens=_arrays.set_text(tokens, "tokens"),
        k=_arrays.set_text(k, "k"), experts=_arrays.set_text(experts, "experts"),
        hidden=_arrays.set_text(hidden, "hidden"),
        intermediate=_arrays.set_text(intermediate, "intermediate"), family=family or "")
    return FuzzReport._of(answer)
