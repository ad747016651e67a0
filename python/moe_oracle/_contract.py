"""Contracts from Python: a dict, a JSON string, or the one a function carries.

The fields are the C door's (docs/fuzz.md, "Bring your own kernel"), parsed by the same
parser: an unknown key is an error naming the nearest known one. The Python door adds one
field of its own, ``"array"``: ``"numpy"`` (the default) or ``"torch"``, the type of the
logits handed to the function under test; it is taken out before the contract is parsed.
"""

import json

ATTRIBUTE = "moe_oracle_contract"
ARRAY_KINDS = ("numpy", "torch")


def with_contract(contract):
    """Decorator: attaches a contract to a router function, so that ``fuzz(fn)`` and
    ``python3 -m moe_oracle fuzz module:fn`` use it without being told."""
    def attach(fn):
        setattr(fn, ATTRIBUTE, contract)
        return fn
    return attach


def split(contract, fn=None):
    """(the contract's JSON text for the parser, the array kind, the name it gives or None)."""
    if contract is None and fn is not None:
        contract = getattr(fn, ATTRIBUTE, None)
    if isinstance(contract, (str, bytes)):
        contract = json.loads(contract)
    fields = dict(contract or {})
    array = fields.pop("array", "numpy")
    if array not in ARRAY_KINDS:
        raise ValueError(f'contract: "array" must be one of {", ".join(ARRAY_KINDS)}; '
                         f"got {array!r}")
    return json.dumps(fields), array, fields.get("name")


def name_of(fn):
    """A router's name for signatures and file names: module.function."""
    module = getattr(fn, "__module__", None) or ""
    qualname = getattr(fn, "__qualname__", None) or type(fn).__name__
    name = f"{module.split('.')[-1]}.{qualname}" if module and module != "__main__" else qualname
    return name.replace("<", "").replace(">", "")
