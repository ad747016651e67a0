"""fuzz: the command's campaign, with a Python function as the router."""

import json
import random
import sys
from collections.abc import Mapping

from . import _arrays, _contract, _core, _family


class Unsupported(Exception):
    """Raised by a function under test for a case it does not take (a shape, k > E, ...):
    the case is abstained, not judged, as a C kernel's MOE_ROUTE_EUNSUPPORTED. Abstained
    cases test nothing; more than half of them is insufficient coverage (exit code 3)."""


class FuzzReport(Mapping):
    """A campaign's summary: the fields of ``moe-oracle fuzz --json``, as keys and as
    attributes (``report["violations"]``, ``report.tokens``, ``report.coverage``), plus
    ``exit_code`` (0 clean, 1 a violation, 3 insufficient coverage, 130 interrupted),
    ``ok``, ``text`` (the command's summary) and ``reports`` (one full report per kind
    found). ``str(report)``: the reports, then the summary. ``to_python(i)`` / ``to_c(i)``:
    finding ``i``'s reproducer as a program for a bug report (``moe-oracle explain --as``)."""

    def __init__(self, fields, text, reports, exit_code, outcome=None, summary=None):
        self._fields = fields
        self.text = text
        self.reports = list(reports)
        self.exit_code = exit_code
        self._outcome = outcome  # the command's RunOutcome, for print()
        self._summary = summary  # the --json text as the command prints it

    @classmethod
    def _of(cls, answer):
        """The report of a run's answer (_core.fuzz, fuzz_dispatch, fuzz_layer)."""
        return cls(json.loads(answer["summary"]), answer["text"], answer["reports"],
                   answer["exit_code"], answer["outcome"], answer["summary"])

    def __getitem__(self, key):
        return self._fields[key]

    def __iter__(self):
        return iter(self._fields)

    def __len__(self):
        return len(self._fields)

    def __getattr__(self, name):
        fields = self.__dict__.get("_fields", {})
        if name in fields:
            return fields[name]
        raise AttributeError(name)

    @property
    def ok(self):
        return self.exit_code == 0

    def json(self):
        """The summary as the command prints it with --json."""
        return self._summary if self._summary is not None else json.dumps(self._fields)

    def print(self, as_json=False, signal=0):
        """Prints the run as ``moe-oracle fuzz`` does, through the command's own printer: the
        reports and the summary on stderr; on stdout the --json summary (as_json) or each
        finding's reproducer path and signature line. Returns the command's exit code
        (128 + ``signal`` when a signal ended the run, 130 when it was interrupted)."""
        if self._outcome is None:
            raise ValueError("this report was not made by a run: there is nothing to print")
        if not signal and self.exit_code == 130:
            signal = 2  # SIGINT: the run was interrupted
        sys.stdout.flush()
        sys.stderr.flush()
        return _core.print_outcome(self._outcome, bool(as_json), int(signal))

    def to_python(self, index=0):
        """Finding ``index`` (of ``report["violations"]``) as a PyTorch snippet, as
        ``moe-oracle explain --as python`` prints its reproducer."""
        return self._snippet(index, "python")

    def to_c(self, index=0):
        """Finding ``index`` as C99, as ``moe-oracle explain --as c`` prints it."""
        return self._snippet(index, "c")

    def _snippet(self, index, language):
        findings = self._fields.get("violations", [])
        if not findings:
            raise ValueError("no violation: there is no finding to write a snippet for")
        with open(findings[index]["reproducer"], encoding="utf-8") as f:
            return _core.snippet(f.read(), language)

    def __str__(self):
        return "".join(self.reports) + self.text

    def __repr__(self):
        kinds = [v["kind"] for v in self._fields.get("violations", [])]
        return (f"FuzzReport(impl={self._fields.get('impl')!r}, cases={self._fields.get('cases')}, "
                f"tokens={self._fields.get('tokens')}, violations={kinds}, "
                f"exit_code={self.exit_code})")


def _route_for(fn, array, v2=False):
    """The callable the C++ router calls: the case's logits in the array type the contract
    asks for, the function's output brought to the C door's slots (a wrong shape or type
    raises here, and so is a finding of kind exception, with this message). With a
    moe_route_v2 contract, the v2 wrapper below."""
    to_input = None
    if array == "torch":
        import torch  # only when asked: the package itself needs NumPy alone
        to_input = torch.from_numpy

    def pair(out):
        try:
            ids, gates = out
        except (TypeError, ValueError):
            raise TypeError(f"the function must return (ids, gates); it returned "
                            f"{type(out).__name__}") from None
        return ids, gates

    def route(logits, k):
        ids, gates = pair(fn(to_input(logits) if to_input else logits, k))
        return _arrays.slots(ids, gates, logits.shape[0], logits.shape[1], k)

    def route_v2(logits, k, raw_family, invalid):
        # What the C++ router reads back (python_router.hpp): (ids, gates); None for
        # MOE_ROUTE_EBADPARAMS; () for invalid parameters accepted (status 0).
        try:
            out = fn(to_input(logits) if to_input else logits, k,
                     _family.to_dict(raw_family, array))
        except ValueError:
            if invalid:  # the Python spelling of EBADPARAMS
                return None
            raise  # on valid parameters: a finding of kind exception, with its traceback
        if invalid:
            return ()
        ids, gates = pair(out)
        _, eligible = _family.check(raw_family, logits.shape[1])
        return _arrays.slots(ids, gates, logits.shape[0], logits.shape[1], k,
                             kept=min(k, eligible))

    return route_v2 if v2 else route


def fuzz(fn, k=None, contract=None, seconds=60, seed=None, out=None, keep_going=False,
         experts=None, tokens=None, *, family=None, shrink_seconds=10, min_tokens=1000, max_cases=0,
         tie_order=None, gate_factor=None, gate_ulp=None, analytic_floor=True, progress=False,
         name=None, jobs=None):
    """Fuzzes ``fn(logits, k) -> (ids, gates)`` against the spec with the command's
    generator, judge and shrinker; returns a FuzzReport.

    ``logits`` is a fresh float32 NumPy array [T, E] each call (a torch tensor when the
    contract says ``"array": "torch"``); ids and gates as ``judge`` takes them. ``k``,
    ``experts``, ``tokens``: the shapes to draw (an int, "1-64,128", a range or a list; the
    contract's "shapes" otherwise, else the command's defaults). ``contract`` defaults to
    the one attached with ``with_contract``. Violations are shrunk and written to ``out``
    (default ./moe-oracle-out) as reproducers that ``moe-oracle replay`` reads. An
    exception from ``fn`` is a finding of kind ``exception`` with its traceback;
    ``Unsupported`` is an abstention; Ctrl-C ends the run with its summary (exit_code 130).
    The keyword-only arguments are the command's other flags.

    With ``"abi": "moe_route_v2"`` in the contract (and its ``"families"``), the cases are the
    routing family's (drawFamilyCase) and the call is ``fn(logits, k, family)``, ``family`` a
    dict as ``judge`` takes it (the bias a float32 array, or a torch tensor with
    ``"array": "torch"``). For parameters outside route_abi.h's domain (1 case in 16) the
    function raises ValueError, the Python spelling of MOE_ROUTE_EBADPARAMS; returning
    routes for them is a finding (bad-params-accepted), and so is a ValueError on valid ones
    (kind exception). ``family``: the model recipes the router implements ("deepseek-v3",
    "llama4,mixtral" or a list of names), as ``--family``: every case follows one of them
    (replacing the contract's "families"). ``jobs``: threads that judge the tokens of a case,
    as ``--jobs`` (default: the cores the process may use); the results are the same for any
    number.
    """
    text, array, contract_name = _contract.split(contract, fn)
    v2 = json.loads(text).get("abi") == "moe_route_v2"
    if seed is None:
        seed = random.SystemRandom().randrange(2**32)
    if family is not None and not isinstance(family, str):
        family = ",".join(family)
    route = _route_for(fn, array, v2)
    answer = _core.fuzz(
        route, Unsupported, name or contract_name or _contract.name_of(fn), text,
        seconds=float(seconds), seed=int(seed), max_cases=int(max_cases),
        out=out or None, keep_going=bool(keep_going),
        shrink_seconds=float(shrink_seconds), min_tokens=int(min_tokens),
        progress=bool(progress), experts=_arrays.set_text(experts, "experts"),
        k=_arrays.set_text(k, "k"), tokens=_arrays.set_text(tokens, "tokens"),
        family=family or "",
        tie_order=tie_order, gate_factor=gate_factor, gate_ulp=gate_ulp,
        analytic_floor=analytic_floor, jobs=jobs)
    return FuzzReport._of(answer)
