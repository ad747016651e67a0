"""A Mixtral router in PyTorch, as Hugging Face's MixtralSparseMoeBlock routes: softmax in
float32, torch.topk (sorted), renormalise over the kept experts. Judged by moe-oracle from
Python (test_mixtral_router.py) and fuzzed with

    PYTHONPATH=build/python python3 -m moe_oracle fuzz mixtral_router:route --seconds 30

from this folder. The three functions after `route` are the same router with a bug each
that test_mixtral_router.py catches (tests/python/test_examples.py runs it on each)."""

import torch

from moe_oracle import with_contract

torch.set_num_threads(1)  # one intra-op thread: deterministic reductions

# What the router promises. torch.topk promises no order among exactly equal values, so
# ties may go either way ("tie_order": "any"); the softmax's exp is Sleef's, within 1 ulp
# (measured in examples/torch_router/torch_router.cpp). "array": "torch" hands `fuzz` a
# tensor instead of a NumPy array.
CONTRACT = {"array": "torch", "selects_on": "probabilities", "slot_order": "rank",
            "tie_order": "any", "exp_max_ulp": 1.0}


@with_contract(CONTRACT)
def route(logits, k):
    """logits [T, E] float32 -> (ids [T, min(k, E)], gates [T, min(k, E)])."""
    probs = torch.softmax(logits, dim=-1, dtype=torch.float32)
    gates, ids = torch.topk(probs, min(k, logits.shape[-1]), dim=-1)
    return ids, gates / gates.sum(dim=-1, keepdim=True)


@with_contract(CONTRACT)
def route_without_renormalising(logits, k):
    """Bug: norm_topk_prob off where the model needs it: the gates do not sum to 1."""
    probs = torch.softmax(logits, dim=-1, dtype=torch.float32)
    gates, ids = torch.topk(probs, min(k, logits.shape[-1]), dim=-1)
    return ids, gates


@with_contract(CONTRACT)
def route_last_token_from_wrong_row(logits, k):
    """Bug: an off-by-one row offset: the last token is routed with the row before it."""
    shifted = logits.clone()
    if shifted.shape[0] >= 2:
        shifted[-1] = shifted[-2]
    return route(shifted, k)


@with_contract(CONTRACT)
def route_in_bfloat16(logits, k):
    """Bug: the softmax in bfloat16: gates a few parts in a thousand off, and near-ties
    decided on rounded probabilities."""
    probs = torch.softmax(logits.to(torch.bfloat16), dim=-1).float()
    gates, ids = torch.topk(probs, min(k, logits.shape[-1]), dim=-1)
    return ids, gates / gates.sum(dim=-1, keepdim=True)
