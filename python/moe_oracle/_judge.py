"""judge and assert_routes: an output already computed, judged against the spec."""

import json
import numbers

from . import _arrays, _contract, _core, _family


class JudgeResult:
    """The judge's answer for one batch.

    ``ok``: no token is a violation. ``verdicts``: one per token (``.token``, ``.outcome``
    exact / acceptable / violation, ``.reason`` for acceptable, ``.kind`` and
    ``.certificate`` for a violation, ``.margin``). ``violations``: the violating verdicts.
    ``str(result)``: the explanation ``moe-oracle explain`` gives for the first violation's
    reproducer (or a one-line count when there is none). ``save(path)`` writes that
    reproducer, which ``moe-oracle replay`` and ``explain`` read. ``to_python()`` and
    ``to_c()``: that reproducer as a self-contained program for a bug report, what
    ``moe-oracle explain --as python`` / ``--as c`` prints.
    """

    def __init__(self, answer):
        self.verdicts = list(answer.verdicts)
        self.violations = [v for v in self.verdicts if v.outcome == "violation"]
        self.explanation = answer.explanation
        self.reproducer = answer.reproducer or None

    @property
    def ok(self):
        return not self.violations

    def counts(self):
        """Tokens per outcome: {"exact": n, "acceptable": n, "violation": n}."""
        counts = {"exact": 0, "acceptable": 0, "violation": 0}
        for v in self.verdicts:
            counts[v.outcome] += 1
        return counts

    def save(self, path):
        """Writes the first violation's reproducer (golden-vector JSON) to ``path``."""
        if self.reproducer is None:
            raise ValueError("no violation: there is no reproducer to save")
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.reproducer + "\n")
        return path

    def to_python(self):
        """The first violation as a PyTorch snippet (``import torch`` alone): the logits as
        exact hex floats, the family, the router's ids and gates, the spec's answer and the
        certificate; running it prints both answers and fails its final assert."""
        return self._snippet("python")

    def to_c(self):
        """The first violation as C99 (hex float literals; moe/route_abi.h for a family),
        whose main prints both answers and returns 1 when they differ."""
        return self._snippet("c")

    def _snippet(self, language):
        if self.reproducer is None:
            raise ValueError("no violation: there is no finding to write a snippet for")
        return _core.snippet(self.reproducer, language)

    def __str__(self):
        return self.explanation

    def __repr__(self):
        kinds = sorted({v.kind for v in self.violations})
        return f"JudgeResult(ok={self.ok}, tokens={len(self.verdicts)}, violations={kinds})"


def judge(logits, ids, gates, k, contract=None, *, family=None, name=None, tie_order=None,
          gate_factor=None, gate_ulp=None, analytic_floor=True):
    """Judges a router's output against the spec, token by token.

    logits: [T, E] float32 (or one token's [E]); ids, gates: [T, min(k, E)] or [T, k].
    NumPy arrays, torch tensors (a CUDA tensor is copied to the host) or anything with
    ``__array__`` or ``__dlpack__``. ``contract``: what the router promises (a dict or JSON
    text, fields as the C door's; default: selection on probabilities, any slot order,
    lowest-index ties). The keyword knobs are the command's --tie-order, --gate-factor,
    --gate-ulp and --no-analytic-floor.

    ``family``: a moe_route_v2 routing family, a dict with route_abi.h's fields (``score``
    "softmax" / "sigmoid", ``bias`` [E] or None, ``groups``, ``topk_groups``,
    ``group_score`` "max" / "top2_sum", ``renormalize``, ``scale``; missing keys: softmax,
    no bias, 1 group, renormalised, scale 1). The batch is then judged by the family verdict
    (docs/fuzz.md, "The routing family"); ids and gates may also be [T, min(k, eligible)].
    Parameters outside the ABI's domain are a ValueError naming the field.
    """
    if not isinstance(k, numbers.Integral) or isinstance(k, bool) or k < 0:
        raise ValueError(f"k must be an int >= 0; got {k!r}")
    k = int(k)
    text, _, contract_name = _contract.split(contract)
    x, single = _arrays.logits_array(logits)
    kept = None
    raw = None
    if family is not None:
        text = _family_contract(text)
        raw = _family.raw(family)
        outside = _family.outside(raw, json.loads(text).get("families"))
        if outside:
            raise ValueError(f"family: {outside}")
        invalid, eligible = _family.check(raw, x.shape[1])
        if invalid:
            raise ValueError(f"family: {invalid}")
        kept = min(k, eligible)
    ids32, gates32 = _arrays.slots(ids, gates, x.shape[0], x.shape[1], k, single, kept)
    answer = _core.judge(x, ids32, gates32, k, text, name or contract_name or "router", raw,
                         tie_order=tie_order, gate_factor=gate_factor, gate_ulp=gate_ulp,
                         analytic_floor=analytic_floor)
    return JudgeResult(answer)


def _family_contract(text):
    """A family is judged for a moe_route_v2 router: a contract that names no ABI becomes
    v2's (so its reproducer replays through moe_route_v2); one that names v1 is refused."""
    fields = json.loads(text)
    abi = fields.setdefault("abi", "moe_route_v2")
    if abi != "moe_route_v2":
        raise ValueError(f'family= is for a moe_route_v2 router; the contract says "abi": '
                         f"{abi!r}")
    return json.dumps(fields)


def assert_routes(logits, ids, gates, k, contract=None, **knobs):
    """As ``judge``, and raises AssertionError with the oracle's explanation when any token
    is a violation; returns the JudgeResult otherwise. One line in a kernel's test where
    ``torch.testing.assert_close`` against a float32 reference was."""
    __tracebackhide__ = True  # pytest shows the caller's line, not this one
    result = judge(logits, ids, gates, k, contract, **knobs)
    if not result.ok:
        kinds = ", ".join(sorted({v.kind for v in result.violations}))
        raise AssertionError(f"{len(result.violations)} of {len(result.verdicts)} token(s) "
                             f"violate the spec ({kinds}):\n{result.explanation}")
    return result
