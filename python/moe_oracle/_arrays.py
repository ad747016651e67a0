"""Arrays from NumPy, PyTorch or DLPack, brought to the host and to what the C door takes.

The judge reads what a kernel behind ``moe_route_v1`` writes: float32 logits [T, E], and k
slots a token of int32 ids and float32 gates, -1 and 0 past min(k, E). Everything a Python
router may return is converted here, once, for ``judge`` and ``fuzz`` alike.
"""

import numpy as np

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def host(x, what):
    """``x`` as a NumPy array in host memory.

    A torch tensor is detached and copied from its device (a CUDA tensor to the host);
    bfloat16 is widened to float32 first, exactly, since NumPy has no bfloat16. Anything
    else goes through ``__array__`` or, failing that, DLPack.
    """
    if type(x).__module__.split(".")[0] == "torch":
        x = x.detach()
        if x.device.type != "cpu":
            x = x.cpu()
        if str(x.dtype) == "torch.bfloat16":
            x = x.float()
        return x.numpy()
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__array__") or isinstance(x, (list, tuple, int, float)):
        return np.asarray(x)
    if hasattr(x, "__dlpack__"):
        return np.from_dlpack(x)
    raise TypeError(f"{what}: expected a NumPy array, a torch tensor, or an object with "
                    f"__array__ or __dlpack__; got {type(x).__name__}")


def logits_array(x):
    """Logits as C-contiguous float32 [T, E] and whether they were one token's row [E].

    float16 and bfloat16 widen to float32 exactly. float64 is refused: rounding it here
    would judge values the router never saw. A Python list is read as float32 values.
    """
    if isinstance(x, (list, tuple)):
        a = np.asarray(x, dtype=np.float32)
    else:
        a = host(x, "logits")
        if a.dtype.kind != "f" or a.dtype.itemsize > 4:
            raise TypeError(f"logits must be float32 (or float16 / bfloat16, widened exactly); "
                            f"got {a.dtype}: cast them to float32 as the router sees them")
    single = a.ndim == 1
    if single:
        a = a.reshape(1, -1)
    if a.ndim != 2:
        raise ValueError(f"logits must be [T, E] (or one token's [E]); got shape {a.shape}")
    return np.ascontiguousarray(a, dtype=np.float32), single


def _ids_int32(ids):
    if ids.dtype.kind not in "iu":
        raise TypeError(f"ids must be integers; got {ids.dtype}")
    # Clipped, not wrapped: an id beyond int32 stays out of range instead of becoming a
    # valid expert.
    if ids.dtype.kind == "u":
        ids = np.minimum(ids, INT32_MAX)
    return np.clip(ids, INT32_MIN, INT32_MAX).astype(np.int32)


def slots(ids, gates, tokens, experts, k, single=False, kept=None):
    """ids and gates as the C door's k slots a token: int32 and float32 [T, k].

    Accepted shapes are [T, min(k, E)] (what ``torch.topk`` gives) or [T, k]; the slots past
    min(k, E) are filled with id -1 and gate 0, as the ABI writes them. Gates of another
    float dtype are rounded to float32, as a kernel's store to a float* would. ``kept``: a
    routing family's min(k, eligible) slots, also accepted as [T, kept].
    """
    ids, gates = host(ids, "ids"), host(gates, "gates")
    if single:
        ids, gates = ids.reshape(1, -1), gates.reshape(1, -1)
    if gates.dtype.kind != "f":
        raise TypeError(f"gates must be floating point; got {gates.dtype}")
    shapes = [(tokens, min(k, experts)), (tokens, k)]
    if kept is not None:
        shapes.insert(0, (tokens, kept))
    if ids.shape != gates.shape or ids.shape not in shapes:
        family = f"[T, min(k, eligible)] = [{tokens}, {kept}], " if kept is not None else ""
        raise ValueError(f"ids and gates must be {family}[T, min(k, E)] = "
                         f"[{tokens}, {min(k, experts)}] (or [T, k] = [{tokens}, {k}]); got "
                         f"ids {tuple(ids.shape)}, gates {tuple(gates.shape)}")
    ids32 = _ids_int32(ids)
    gates32 = np.ascontiguousarray(gates, dtype=np.float32)
    if ids32.shape[1] < k:
        pad = k - ids32.shape[1]
        ids32 = np.concatenate([ids32, np.full((tokens, pad), -1, np.int32)], axis=1)
        gates32 = np.concatenate([gates32, np.zeros((tokens, pad), np.float32)], axis=1)
    return np.ascontiguousarray(ids32), gates32


def set_text(values, what):
    """A shape argument as the command's value-and-range list: 8, "1-64,128", range(1, 65),
    [16, 32]; None is "" (the default)."""
    if values is None:
        return ""
    if isinstance(values, str):
        return values
    if isinstance(values, (int, np.integer)) and not isinstance(values, bool):
        return str(int(values))
    if isinstance(values, range) and values.step == 1 and len(values) > 0:
        return f"{values.start}-{values.stop - 1}"
    try:
        items = [int(v) for v in values]
    except (TypeError, ValueError):
        raise TypeError(f"{what}: expected an int, a string such as '1-64,128', a range or a "
                        f"list of ints; got {values!r}") from None
    if not items:
        raise ValueError(f"{what}: an empty list draws nothing")
    return ",".join(str(v) for v in items)
