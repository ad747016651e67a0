"""Routing-family routers (moe_route_v2) in NumPy for the Python door's tests: one correct,
DeepSeek-V3 style (sigmoid or softmax scores, a selection bias, expert groups scored by max
or top-2 sum, renormalised, scaled), and one per planted bug. Each is
``route(logits, k, family) -> (ids, gates)`` as ``moe_oracle.fuzz`` calls a v2 function,
``family`` the dict of moe_oracle (route_abi.h's field names)."""

import numpy as np

# NumPy's float32 exp is a SIMD kernel a few ulp from correctly rounded (docs/fuzz.md).
# What a missing key means (route_abi.h's Mixtral family): the tests pass partial dicts.
DEFAULTS = {"score": "softmax", "bias": None, "groups": 1, "topk_groups": 1,
            "group_score": "max", "renormalize": True, "scale": 1.0}
CONTRACT = {"abi": "moe_route_v2", "slot_order": "rank", "exp_max_ulp": 4,
            "families": {"scores": ["softmax", "sigmoid"], "groups": True, "bias": True}}


def check(family, experts):
    """ValueError (the Python spelling of MOE_ROUTE_EBADPARAMS) outside route_abi.h's
    domain: the fuzzer draws such parameters 1 case in 16 and requires it."""
    f = family
    if f["score"] not in ("softmax", "sigmoid"):
        raise ValueError(f"score {f['score']!r}")
    if f["renormalize"] not in (True, False):
        raise ValueError(f"renormalize {f['renormalize']!r}")
    if not np.isfinite(f["scale"]):
        raise ValueError(f"scale {f['scale']!r}")
    groups, top = f["groups"], f["topk_groups"]
    if groups < 1 or experts % groups != 0:
        raise ValueError(f"groups {groups} for {experts} experts")
    if not 1 <= top <= groups:
        raise ValueError(f"topk_groups {top} of {groups}")
    if groups > 1 and f["group_score"] not in ("max", "top2_sum"):
        raise ValueError(f"group_score {f['group_score']!r}")
    if groups > 1 and f["group_score"] == "top2_sum" and experts // groups < 2:
        raise ValueError("top2_sum needs groups of two experts or more")


def scores(x, score):
    """float32 scores: 1 / (1 + exp(-x)), or the softmax of the row."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if score == "sigmoid":
            return np.float32(1) / (np.float32(1) + np.exp(-x))
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)


def group_scores(keys, groups, how):
    """[T, G]: each group's max key, or the sum of its two best keys."""
    grouped = keys.reshape(keys.shape[0], groups, -1)
    if how == "max":
        return grouped.max(axis=2)
    best = -np.sort(-grouped, axis=2)  # NaN last, as -NaN sorts
    return best[:, :, 0] + best[:, :, 1]


def kept_groups(gscores, top, lower_group_first=True):
    """[T, top]: the best groups, exact ties to the lower group (a stable sort)."""
    neg = np.where(np.isnan(gscores), np.inf, -gscores)
    if lower_group_first:
        return np.argsort(neg, axis=1, kind="stable")[:, :top]
    groups = gscores.shape[1]
    return groups - 1 - np.argsort(neg[:, ::-1], axis=1, kind="stable")[:, :top]


def route(logits, k, family, *, gates_from_keys=False, group_max_always=False,
          group_ties_higher=False):
    """logits [T, E] float32 -> (ids [T, n], gates [T, n]), n = min(k, eligible). The
    keyword flags plant the bugs below; all off, the spec's routing."""
    x = np.asarray(logits, dtype=np.float32)
    tokens, experts = x.shape
    family = {**DEFAULTS, **family}
    check(family, experts)
    if experts == 0:
        return np.zeros((tokens, 0), np.int64), np.zeros((tokens, 0), np.float32)
    s = scores(x, family["score"])
    bias = family["bias"]
    keys = s if bias is None else s + np.asarray(bias, dtype=np.float32)
    groups, top = family["groups"], family["topk_groups"]
    eligible = np.ones((tokens, experts), dtype=bool)
    if groups > 1:
        how = "max" if group_max_always else family["group_score"]
        kept = kept_groups(group_scores(keys, groups, how), top, not group_ties_higher)
        mask = np.zeros((tokens, groups), dtype=bool)
        np.put_along_axis(mask, kept, True, axis=1)
        eligible = np.repeat(mask, experts // groups, axis=1)
    n = min(k, int(eligible[0].sum()) if tokens else experts)
    neg = np.where(np.isnan(keys), np.inf, -keys)
    # Eligible first, then by key, exact ties to the lower index (lexsort is stable).
    order = np.lexsort((neg, ~eligible), axis=1)
    ids = order[:, :n]
    gates = np.take_along_axis(keys if gates_from_keys else s, ids, axis=1)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        if family["renormalize"]:
            # the kept scores summed in expert index order, as route_abi.h says
            total = np.take_along_axis(gates, np.argsort(ids, axis=1), axis=1).sum(axis=1)
            gates = gates / total[:, None]
        gates = gates * np.float32(family["scale"])
    return ids, gates.astype(np.float32)


def correct(logits, k, family):
    return route(logits, k, family)


def gate_bias(logits, k, family):
    """Bug: the gates are the biased keys s + b, not the scores."""
    return route(logits, k, family, gates_from_keys=True)


def group_max(logits, k, family):
    """Bug: groups scored by their max key where the top-2 sum is asked."""
    return route(logits, k, family, group_max_always=True)


def group_tie_higher(logits, k, family):
    """Bug: groups with exactly equal scores go to the higher group."""
    return route(logits, k, family, group_ties_higher=True)


def accepts_bad_params(logits, k, family):
    """Bug: no parameter check; groups that do not divide E route anyway (or crash)."""
    f = {**DEFAULTS, **family}
    experts = np.asarray(logits).shape[1]
    if f["groups"] < 1 or experts % f["groups"] or not 1 <= f["topk_groups"] <= f["groups"]:
        f["groups"] = f["topk_groups"] = 1
    if f["score"] not in ("softmax", "sigmoid"):
        f["score"] = "softmax"
    if f["group_score"] not in ("max", "top2_sum") or experts // max(f["groups"], 1) < 2:
        f["group_score"] = "max"
    f["renormalize"] = bool(f["renormalize"])
    f["scale"] = f["scale"] if np.isfinite(f["scale"]) else 1.0
    return route(logits, k, f)
