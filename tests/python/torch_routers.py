"""Routers written in PyTorch for the Python door's tests. `planted_tie_bug` is the issue's
"planted tie bug in a torch function": it claims the spec's tie rule and breaks it."""

import torch

from moe_oracle import with_contract

torch.set_num_threads(1)  # one intra-op thread: the fuzz loop is single-threaded


def _gates(logits, ids):
    return torch.softmax(torch.gather(logits, 1, ids), dim=-1)


@with_contract({"array": "torch", "selects_on": "logits", "slot_order": "rank"})
def logits_router(logits, k):
    """Correct: top-k on the logits with ties to the lower index (a stable sort), softmax
    over the kept ones."""
    n = min(k, logits.shape[1])
    ids = torch.sort(logits, dim=1, descending=True, stable=True).indices[:, :n]
    return ids, _gates(logits, ids)


@with_contract({"array": "torch", "selects_on": "logits", "slot_order": "rank"})
def planted_tie_bug(logits, k):
    """As logits_router, but on the experts in reverse: equal logits go to the higher index."""
    n = min(k, logits.shape[1])
    reversed_ids = torch.sort(logits.flip(1), dim=1, descending=True, stable=True).indices
    ids = logits.shape[1] - 1 - reversed_ids[:, :n]
    return ids, _gates(logits, ids)
