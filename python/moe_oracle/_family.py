"""The routing family (moe_route_v2): its parameters as a dict, read and written here only.

A family is a dict with route_abi.h's field names (``moe_route_params_v2``)::

    {"score": "sigmoid", "bias": e_score_correction_bias, "groups": 8, "topk_groups": 4,
     "group_score": "top2_sum", "renormalize": True, "scale": 2.5}

Missing keys take the defaults of fuzz::Family (Mixtral's routing, what a moe_route_v1
router computes): softmax, no bias, one group, top 1 group, group score max, renormalised,
scale 1. The extension gets the raw values as a tuple in route_abi.h's order and builds the
fuzzer's Family from it (python/src/family.hpp); the fuzzer hands the function's wrapper the
same tuple back, which ``to_dict`` turns into the dict the function receives.
"""

import difflib
import numbers

import numpy as np

from . import _arrays, _core

SCORES = ("softmax", "sigmoid")          # MOE_SCORE_SOFTMAX 0, MOE_SCORE_SIGMOID 1
GROUP_SCORES = ("max", "top2_sum")       # MOE_GROUP_MAX 0, MOE_GROUP_TOP2_SUM 1
DEFAULTS = {"score": "softmax", "bias": None, "groups": 1, "topk_groups": 1,
            "group_score": "max", "renormalize": True, "scale": 1.0}
FIELDS = tuple(DEFAULTS)


def _enum(value, names, field):
    if isinstance(value, str):
        if value in names:
            return names.index(value)
        raise ValueError(f'family: "{field}" must be one of {", ".join(map(repr, names))} (or '
                         f"0 to {len(names) - 1}); got {value!r}")
    return _int(value, field)


def _int(value, field):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f'family: "{field}" must be an int; got {value!r}')
    value = int(value)
    if not _arrays.INT32_MIN <= value <= _arrays.INT32_MAX:
        raise ValueError(f'family: "{field}" {value} is outside int32')
    return value


def _bias(value):
    """float32 [E]: float16 and bfloat16 widen exactly, float64 is refused (as logits are:
    rounding it here would judge keys the router never computed), a list is float32."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        a = np.asarray(value, dtype=np.float32)
    else:
        a = _arrays.host(value, "family bias")
        if a.dtype.kind != "f" or a.dtype.itemsize > 4:
            raise ValueError(f'family: "bias" must be float32 (or float16 / bfloat16); got '
                             f"{a.dtype}: cast it to float32 as the router adds it")
    if a.ndim != 1:
        raise ValueError(f'family: "bias" must be one value per expert, [E]; got shape '
                         f"{a.shape}")
    return np.ascontiguousarray(a, dtype=np.float32)


def raw(family):
    """The extension's tuple (score, bias, groups, topk_groups, group_score, renormalize,
    scale, struct_short) of a family dict; ValueError naming the field that is wrong."""
    if not isinstance(family, dict):
        raise ValueError(f"family must be a dict with keys {', '.join(FIELDS)}; got "
                         f"{type(family).__name__}")
    for key in family:
        if key not in DEFAULTS:
            near = difflib.get_close_matches(str(key), FIELDS, n=1)
            hint = f' (did you mean "{near[0]}"?)' if near else ""
            raise ValueError(f'family: unknown key "{key}"{hint}; the keys are '
                             f"{', '.join(FIELDS)}")
    f = {**DEFAULTS, **family}
    renormalize = f["renormalize"]
    if not isinstance(renormalize, (bool, np.bool_)):
        renormalize = _int(renormalize, "renormalize")
    scale = f["scale"]
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise ValueError(f'family: "scale" must be a number; got {scale!r}')
    return (_enum(f["score"], SCORES, "score"), _bias(f["bias"]), _int(f["groups"], "groups"),
            _int(f["topk_groups"], "topk_groups"),
            _enum(f["group_score"], GROUP_SCORES, "group_score"), int(renormalize),
            float(np.float32(scale)), 0)


def outside(raw_family, families):
    """Why the family lies outside what a contract's ``"families"`` says its router supports
    (``{"scores": [...], "groups": bool, "bias": bool}``; absent fields allow anything), or
    "". The fuzzer draws only inside it; a judged batch outside it is a mistake in the call."""
    if not isinstance(families, dict):
        return ""
    score, bias, groups = raw_family[0], raw_family[1], raw_family[2]
    scores = families.get("scores")
    name = SCORES[score] if 0 <= score < len(SCORES) else score
    if isinstance(scores, list) and name not in scores:
        return (f'"score" {name!r} is not among the contract\'s "families.scores" '
                f"{scores}")
    if families.get("groups") is False and groups != 1:
        return f'"groups" {groups}: the contract\'s "families" says "groups": false'
    if families.get("bias") is False and bias is not None:
        return 'a "bias": the contract\'s "families" says "bias": false'
    return ""


def check(raw_family, experts):
    """(why the family is outside route_abi.h's domain for E experts, or "", the experts it
    makes eligible), by the fuzzer's own familyInvalidReason and familyEligible."""
    invalid, eligible, _ = _core.family_check(raw_family, experts)
    return invalid, eligible


def to_dict(raw_family, array="numpy"):
    """The dict a function under test receives for the fuzzer's raw tuple: names for the
    enums' values (raw ints outside them), renormalize a bool (a raw int outside 0 / 1), the
    bias a float32 array (a torch tensor when ``array`` is "torch") or None."""
    score, bias, groups, topk_groups, group_score, renormalize, scale, _ = raw_family
    if bias is not None and array == "torch":
        import torch
        bias = torch.from_numpy(bias)
    return {"score": SCORES[score] if score in (0, 1) else score,
            "bias": bias,
            "groups": groups,
            "topk_groups": topk_groups,
            "group_score": GROUP_SCORES[group_score] if group_score in (0, 1) else group_score,
            "renormalize": bool(renormalize) if renormalize in (0, 1) else renormalize,
            "scale": scale}
