"""A router in NumPy: softmax in float32, the top k with ties to the lower index (a stable
sort), gates renormalised over the kept experts. Fuzz it from this folder with

    PYTHONPATH=build/python python3 -m moe_oracle fuzz numpy_router:route --seconds 30

or from Python:

    import moe_oracle, numpy_router
    report = moe_oracle.fuzz(numpy_router.route, seconds=30)
    assert report.ok, str(report)
"""

import numpy as np

from moe_oracle import with_contract


# NumPy's float32 exp is a SIMD kernel a few ulp from the correctly rounded value: the
# contract says 4, which widens the probability and gate budgets accordingly.
@with_contract({"selects_on": "probabilities", "slot_order": "rank", "exp_max_ulp": 4})
def route(logits, k):
    """logits [T, E] float32 -> (ids [T, min(k, E)], gates [T, min(k, E)])."""
    tokens, experts = logits.shape
    if experts == 0:
        return np.zeros((tokens, 0), np.int64), np.zeros((tokens, 0), np.float32)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):  # non-real rows: NaN
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs = e / e.sum(axis=1, keepdims=True)
        ids = np.argsort(-probs, axis=1, kind="stable")[:, :min(k, experts)]
        kept = np.take_along_axis(probs, ids, axis=1)
        return ids, kept / kept.sum(axis=1, keepdims=True)
