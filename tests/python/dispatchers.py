"""Dispatch kernels written in NumPy for the Python door's tests: one correct (the
``moe_align_block_size`` of serving engines, with capacity), and one per bug the dispatch
door names for a Python function: the last block not padded, capacity keeping the last
slots instead of the first, padding counted as a slot in rows. Each takes ids int32 [T, k],
k, experts, block, capacity and returns (sorted_slots, block_expert, rows)."""

import numpy as np


def _layout(ids, experts, block, capacity, keep_last=False):
    """Each expert's kept slots in slot order: (order, expert of each, its rank within its
    expert, kept slots per expert)."""
    flat = np.asarray(ids, dtype=np.int64).reshape(-1)
    order = np.argsort(flat, kind="stable")
    order = order[flat[order] >= 0]
    expert_of = flat[order]
    counts = np.bincount(expert_of, minlength=experts).astype(np.int64)
    rank = np.arange(order.size, dtype=np.int64) - (np.cumsum(counts) - counts)[expert_of]
    if capacity >= 0:
        keep = rank >= counts[expert_of] - capacity if keep_last else rank < capacity
        if keep_last:
            rank = rank - np.maximum(counts[expert_of] - capacity, 0)
        order, expert_of, rank = order[keep], expert_of[keep], rank[keep]
        counts = np.minimum(counts, capacity)
    return flat.size, order, expert_of, rank, counts


def _written(pad, order, expert_of, rank, counts, block):
    padded = -(-counts // block) * block
    starts = np.cumsum(padded) - padded
    rows = int(padded.sum())
    sorted_slots = np.full(rows, pad, dtype=np.int32)
    sorted_slots[starts[expert_of] + rank] = order
    block_expert = np.repeat(np.arange(counts.size, dtype=np.int32), padded // block)
    return sorted_slots, block_expert, rows


def spec_dispatch(ids, k, experts, block, capacity):
    """Correct: experts in order, slots in slot order, each list padded to the block."""
    return _written(*_layout(ids, experts, block, capacity), block)


def last_block_unpadded(ids, k, experts, block, capacity):
    """The last expert's list is left short of its block: rows stops at its last slot."""
    sorted_slots, block_expert, rows = spec_dispatch(ids, k, experts, block, capacity)
    while rows > 0 and sorted_slots[rows - 1] == np.asarray(ids).size:
        rows -= 1
    return sorted_slots[:rows], block_expert, rows


def capacity_keeps_last(ids, k, experts, block, capacity):
    """Over capacity, an expert keeps its last `capacity` slots (dropping the early ones)."""
    return _written(*_layout(ids, experts, block, capacity, keep_last=True), block)


def padding_counted(ids, k, experts, block, capacity):
    """rows counts one padding block too many when the last expert's list is full."""
    sorted_slots, block_expert, rows = spec_dispatch(ids, k, experts, block, capacity)
    if rows > 0 and rows % block == 0 and sorted_slots[rows - 1] != np.asarray(ids).size:
        pad = np.full(block, np.asarray(ids).size, dtype=np.int32)
        return np.concatenate([sorted_slots, pad]), block_expert, rows + block
    return sorted_slots, block_expert, rows


def raises_on_empty(ids, k, experts, block, capacity):
    """Correct, except that it raises on a case with an empty slot."""
    if (np.asarray(ids) < 0).any():
        raise IndexError("an empty slot")
    return spec_dispatch(ids, k, experts, block, capacity)
