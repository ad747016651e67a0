"""Routers written in NumPy for the Python door's tests: one correct, and one per bug the
issue names (ties to the higher index, no renormalisation, a wrong row for the last token),
plus one that raises. Each takes float32 logits [T, E] and k, and returns (ids, gates) of
shape [T, min(k, E)], as a Mixtral-style router does (softmax, top-k, renormalise)."""

import numpy as np

# numpy's float32 exp is a SIMD kernel a few ulp from correctly rounded: the contract says
# so, and the probability and gate budgets widen accordingly (docs/fuzz.md).
CONTRACT = {"selects_on": "probabilities", "slot_order": "rank", "exp_max_ulp": 4}


def probabilities(logits):
    x = np.asarray(logits, dtype=np.float32)
    if x.shape[1] == 0:
        return x
    with np.errstate(invalid="ignore", over="ignore"):  # +inf and all -inf rows: NaN, as torch
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)


def _top(p, k, lower_index_first=True):
    n = min(k, p.shape[1])
    if lower_index_first:  # a stable sort of -p keeps equal probabilities in index order
        return np.argsort(-p, axis=1, kind="stable")[:, :n]
    flipped = np.argsort(-p[:, ::-1], axis=1, kind="stable")[:, :n]
    return p.shape[1] - 1 - flipped


def _renormalised(p, ids):
    kept = np.take_along_axis(p, ids, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return kept / kept.sum(axis=1, keepdims=True)


def spec_router(logits, k):
    """Correct: softmax, top-k with ties to the lower index, renormalised."""
    p = probabilities(logits)
    ids = _top(p, k)
    return ids, _renormalised(p, ids)


def tie_higher_index(logits, k):
    """Bug: among equal probabilities the higher index wins."""
    p = probabilities(logits)
    ids = _top(p, k, lower_index_first=False)
    return ids, _renormalised(p, ids)


def no_renormalise(logits, k):
    """Bug: the gates are the softmax probabilities, not renormalised over the kept set."""
    p = probabilities(logits)
    ids = _top(p, k)
    return ids, np.take_along_axis(p, ids, axis=1)


def last_token_wrong_row(logits, k):
    """Bug: the last token is routed with the row before it (an off-by-one row offset)."""
    shifted = np.array(logits, dtype=np.float32)
    if shifted.shape[0] >= 2:
        shifted[-1] = shifted[-2]
    return spec_router(shifted, k)


def two_exceptions(logits, k):
    """Two bugs: a RuntimeError on every row of no experts (a degenerate shape), and an
    AttributeError whenever k is 3 (a field its author never set, read on one path)."""
    if logits.shape[1] == 0:
        raise RuntimeError("cannot take the max of an empty row")
    if k == 3:
        raise AttributeError("'Router' object has no attribute 'topk_group'")
    return spec_router(logits, k)


def raises_on_wide_rows(logits, k):
    """Bug: an exception for more than 8 experts."""
    if logits.shape[1] > 8:
        raise ValueError(f"cannot route {logits.shape[1]} experts")
    return spec_router(logits, k)
