"""DeepSeek-V3's routing in PyTorch: the grouped_topk of vLLM's and SGLang's reference paths
(sigmoid scores, e_score_correction_bias added for selection only, 8 groups scored by the
sum of their two best keys, the 4 best groups kept, top 8 experts, gates renormalised over
the unbiased scores and multiplied by routed_scaling_factor 2.5), written against the
routing family of moe_route_v2. Fuzz it from this folder with

    PYTHONPATH=../../build/python python3 -m moe_oracle fuzz deepseek_router:route

``route(logits, k, family)`` takes the family as moe_oracle hands it (route_abi.h's field
names); ``grouped_topk`` has the usual keyword spelling. A buggy variant that a test looks
for: ``route_gates_with_bias`` (the gates taken from the biased keys).
"""

import torch

from moe_oracle import Unsupported, with_contract

# torch.topk promises no order among equal values and sorted=False no slot order; the
# contract says so. torch's float32 sigmoid and exp are a few ulp from correctly rounded.
CONTRACT = {"abi": "moe_route_v2", "array": "torch", "slot_order": "any", "tie_order": "any",
            "exp_max_ulp": 4,
            "families": {"scores": ["softmax", "sigmoid"], "groups": True, "bias": True}}

# DeepSeek-V3's parameters as a family dict (judge(..., family=DEEPSEEK_V3 | {"bias": b})).
DEEPSEEK_V3 = {"score": "sigmoid", "groups": 8, "topk_groups": 4, "group_score": "top2_sum",
               "renormalize": True, "scale": 2.5}


def grouped_topk(gating_output, topk, *, renormalize, num_expert_group=1, topk_group=1,
                 scoring_func="sigmoid", e_score_correction_bias=None, group_score="top2_sum",
                 routed_scaling_factor=1.0, gates_with_bias=False):
    """gating_output [T, E] float32 -> (topk_ids [T, topk], topk_weights [T, topk])."""
    tokens, experts = gating_output.shape
    if scoring_func == "sigmoid":
        scores = gating_output.sigmoid()
    else:
        scores = gating_output.softmax(dim=-1)
    original = scores
    if e_score_correction_bias is not None:
        scores = scores + e_score_correction_bias.unsqueeze(0)
    if num_expert_group > 1:
        # Sizes spelled out: view(T, G, -1) and reshape(T, -1), as vLLM writes them, are
        # ambiguous at T = 0, a RuntimeError on an empty batch that the fuzzer found.
        grouped = scores.view(tokens, num_expert_group, experts // num_expert_group)
        if group_score == "top2_sum":
            group_scores = grouped.topk(2, dim=-1)[0].sum(dim=-1)
        else:
            group_scores = grouped.max(dim=-1).values
        group_idx = torch.topk(group_scores, k=topk_group, dim=-1, sorted=False)[1]
        group_mask = torch.zeros_like(group_scores).scatter_(1, group_idx, 1)
        score_mask = group_mask.unsqueeze(-1).expand(
            tokens, num_expert_group, experts // num_expert_group).reshape(tokens, experts)
        scores = scores.masked_fill(~score_mask.bool(), float("-inf"))
    topk_ids = torch.topk(scores, k=topk, dim=-1, sorted=False)[1]
    topk_weights = (scores if gates_with_bias else original).gather(1, topk_ids)
    if renormalize:
        topk_weights = topk_weights / topk_weights.sum(dim=-1, keepdim=True)
    return topk_ids, topk_weights * routed_scaling_factor


def _check(family, experts):
    """ValueError outside route_abi.h's domain: moe_oracle reads it as MOE_ROUTE_EBADPARAMS."""
    groups, top = family["groups"], family["topk_groups"]
    if family["score"] not in ("softmax", "sigmoid"):
        raise ValueError(f"unknown scoring function {family['score']!r}")
    if family["renormalize"] not in (True, False):
        raise ValueError(f"renormalize must be a bool, got {family['renormalize']!r}")
    if not torch.isfinite(torch.tensor(family["scale"])):
        raise ValueError(f"routed_scaling_factor {family['scale']} is not finite")
    if groups < 1 or experts % groups or not 1 <= top <= groups:
        raise ValueError(f"{groups} groups, top {top}, for {experts} experts")
    if groups > 1 and family["group_score"] not in ("max", "top2_sum"):
        raise ValueError(f"unknown group score {family['group_score']!r}")
    if groups > 1 and family["group_score"] == "top2_sum" and experts // groups < 2:
        raise ValueError("the top-2 sum needs groups of two experts or more")


def _route(logits, k, family, gates_with_bias=False):
    experts = logits.shape[1]
    _check(family, experts)
    groups = family["groups"]
    eligible = experts if groups == 1 else family["topk_groups"] * experts // groups
    # torch.topk would take masked (-inf) experts of dropped groups past the eligible ones:
    # this router does not take such k, and says so (an abstention, not a finding).
    if k > eligible or experts == 0:
        raise Unsupported(f"k = {k} above the {eligible} eligible experts")
    return grouped_topk(logits, k, renormalize=family["renormalize"], num_expert_group=groups,
                        topk_group=family["topk_groups"], scoring_func=family["score"],
                        e_score_correction_bias=family["bias"],
                        group_score=family["group_score"], routed_scaling_factor=family["scale"],
                        gates_with_bias=gates_with_bias)


@with_contract(CONTRACT)
def route(logits, k, family):
    return _route(logits, k, family)


@with_contract(CONTRACT)
def route_gates_with_bias(logits, k, family):
    """Bug: the gates are the biased keys, as a kernel that reuses the selection buffer."""
    return _route(logits, k, family, gates_with_bias=True)
