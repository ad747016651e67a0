"""fuzz_dispatch, judge_dispatch, assert_dispatch: the dispatch door (moe_dispatch_v1, the
``moe_align_block_size`` of serving engines) for a Python function.

The function is ``fn(ids, k, experts, block, capacity) -> (sorted_slots, block_expert,
rows)``: ``ids`` int32 [T, k] (-1 an empty slot; a torch tensor with ``"array": "torch"``),
and what layer_abi.h's kernel writes: each expert's kept slots (t * k + j) listed in
increasing expert order, each list padded with the value T * k to a multiple of ``block``;
``block_expert`` the expert of each block; ``rows`` the padded length. ``capacity`` -1 is no
limit; else an expert keeps its first ``capacity`` slots in slot order. Entries past
``rows`` (a buffer sized for the worst case, as vLLM's) are allowed but must not be slots.
The judge, generator and shrinker are the command's (docs/fuzz.md, "The dispatch door").
"""

import json
import random

import numpy as np

from . import _arrays, _contract, _core
from ._fuzz import FuzzReport, Unsupported

_DEFAULT_CONTRACT = {"abi": "moe_dispatch_v1"}


def _int_list(x, what):
    """A returned list as a flat int32 array, clipped (not wrapped) into int32."""
    a = _arrays.host(x, what)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{what} must be integers; got {a.dtype}")
    if a.ndim > 1:
        raise ValueError(f"{what} must be one-dimensional; got shape {tuple(a.shape)}")
    return np.ascontiguousarray(_arrays._ids_int32(a.reshape(-1)))


def _rows(x):
    a = _arrays.host(x, "rows")
    if a.size != 1 or a.dtype.kind not in "iu":
        raise TypeError(f"rows must be one integer; got {a.dtype} of shape {tuple(a.shape)}")
    return int(a.reshape(-1)[0])


def _answer(out):
    try:
        sorted_slots, block_expert, rows = out
    except (TypeError, ValueError):
        raise TypeError(f"the function must return (sorted_slots, block_expert, rows); it "
                        f"returned {type(out).__name__}") from None
    return (_int_list(sorted_slots, "sorted_slots"), _int_list(block_expert, "block_expert"),
            _rows(rows))


def _dispatch_for(fn, array):
    """The callable the C++ dispatcher calls: the case's ids in the contract's array type,
    the answer brought to int32 lists (a wrong type or shape raises here, and so is a
    finding of kind exception, with this message)."""
    to_input = None
    if array == "torch":
        import torch  # only when asked: the package itself needs NumPy alone
        to_input = torch.from_numpy

    def dispatch(ids, k, experts, block, capacity):
        return _answer(fn(to_input(ids) if to_input else ids, k, experts, block, capacity))

    return dispatch


def _contract_text(contract, fn=None):
    text, array, name = _contract.split(contract, fn)
    fields = json.loads(text) or dict(_DEFAULT_CONTRACT)
    return json.dumps(fields), array, name


def fuzz_dispatch(fn, contract=None, seconds=60, seed=None, out=None, keep_going=False, *,
                  tokens=None, k=None, experts=None, block=None, capacity=None,
                  shrink_seconds=10, min_tokens=1000, max_cases=0, progress=False, name=None):
    """Fuzzes ``fn(ids, k, experts, block, capacity) -> (sorted_slots, block_expert, rows)``
    against the dispatch spec with the command's generator, exact verdict and shrinker;
    returns a FuzzReport with the fields of ``moe-oracle fuzz --impl lib.so --json`` on a
    moe_dispatch_v1 library.

    ``contract``: a dict or JSON text as a moe_dispatch_v1 library's contract
    (``"within_expert_order": "slot" | "any"``, ``"shapes"``), plus ``"array": "numpy" |
    "torch"``; default: the one attached with ``with_contract``, else slot order and the
    fuzzer's own shapes. ``tokens``, ``k``, ``experts``, ``block``, ``capacity``: the shapes
    to draw (an int, "1-64,128", a range or a list; capacity -1 is no limit), as the
    command's flags. Cases are inside the domain only (a function has no statuses). Now
    and then a case crosses 2^16 or 2^24 slots, when the function's speed so far says it
    ends within ``seconds``. Violations are shrunk and written to ``out`` (default
    ./moe-oracle-out) as reproducers that ``moe-oracle replay`` and ``explain`` read. An
    exception from ``fn`` is a finding of kind ``exception`` with its traceback;
    ``Unsupported`` an abstention; Ctrl-C ends the run with its summary (exit_code 130).
    """
    text, array, contract_name = _contract_text(contract, fn)
    if seed is None:
        seed = random.SystemRandom().randrange(2**32)
    answer = _core.fuzz_dispatch(
        _dispatch_for(fn, array), Unsupported, name or contract_name or _contract.name_of(fn),
        text, seconds=float(seconds), seed=int(seed), max_cases=int(max_cases),
        out=out or None, keep_going=bool(keep_going),
        shrink_seconds=float(shrink_seconds), min_tokens=int(min_tokens),
        progress=bool(progress), tokens=_arrays.set_text(tokens, "tokens"),
        k=_arrays.set_text(k, "k"), experts=_arrays.set_text(experts, "experts"),
        block=_arrays.set_text(block, "block"), capacity=_arrays.set_text(capacity, "capacity"))
    return FuzzReport._of(answer)


class DispatchJudgeResult:
    """The dispatch verdict on one answer: ``ok``, ``kind`` (None when it passes),
    ``certificate`` (what broke, with the slots and positions); ``str()`` the report
    ``moe-oracle explain`` prints for a finding."""

    def __init__(self, fields):
        self.kind = fields["kind"] or None
        self.tag = fields["tag"]
        self.certificate = fields["certificate"]
        self.report = fields["report"]

    @property
    def ok(self):
        return self.kind is None

    def __bool__(self):
        return self.ok

    def __str__(self):
        return self.report or "the dispatch passes: it is the spec's\n"

    def __repr__(self):
        return f"DispatchJudgeResult(kind={self.kind!r})"


def _case_ids(ids, experts):
    a = _arrays.host(ids, "ids")
    if a.dtype.kind not in "iu":
        raise TypeError(f"ids must be integers; got {a.dtype}")
    if a.ndim != 2:
        raise ValueError(f"ids must be [T, k]; got shape {tuple(a.shape)}")
    bad = (a < -1) | (a >= experts)
    if bad.any():
        t, j = (int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"ids[{t}, {j}] = {int(a[t, j])} is neither -1 nor in 0..{experts - 1}")
    return np.ascontiguousarray(a, dtype=np.int32)


def judge_dispatch(ids, sorted_slots, block_expert, rows, *, experts, block, capacity=-1,
                   contract=None):
    """Judges one dispatch answer exactly against the spec: ``ids`` [T, k] as the kernel
    got them, its ``sorted_slots``, ``block_expert`` and ``rows``. Returns a
    DispatchJudgeResult. ``contract``: ``{"within_expert_order": "any"}`` for a kernel
    that fills each expert's list in any order (atomics). Parameters outside the domain
    (an id neither -1 nor an expert, block < 1) raise ValueError."""
    if block < 1 or experts < 0 or capacity < -1:
        raise ValueError(f"block must be >= 1, experts >= 0, capacity >= -1; got block "
                         f"{block}, experts {experts}, capacity {capacity}")
    case_ids = _case_ids(ids, experts)
    text, _, _ = _contract_text(contract)
    answer = _answer((sorted_slots, block_expert, rows))
    return DispatchJudgeResult(_core.judge_dispatch(
        case_ids, case_ids.shape[0], case_ids.shape[1], int(experts), int(block), int(capacity),
        answer[0], answer[1], answer[2], text))


def assert_dispatch(ids, sorted_slots, block_expert, rows, *, experts, block, capacity=-1,
                    contract=None):
    """``judge_dispatch``, raising AssertionError with the report when it does not pass."""
    result = judge_dispatch(ids, sorted_slots, block_expert, rows, experts=experts, block=block,
                            capacity=capacity, contract=contract)
    if not result.ok:
        raise AssertionError(str(result))
    return result
