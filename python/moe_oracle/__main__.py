"""python3 -m moe_oracle fuzz package.module:function [the command's fuzz flags]

Output and exit codes are the command's (docs/fuzz.md): the reports and the summary on
stderr; on stdout the reproducer paths and signature lines, or with --json one JSON object;
0 no violation, 1 a violation, 2 bad usage or a function that cannot be imported, 3
insufficient coverage, 130 / 143 interrupted by SIGINT / SIGTERM.
"""

import argparse
import importlib
import json
import signal
import sys

from . import _fuzz


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised inside the function under test so the campaign ends cleanly."""


def _on_sigterm(signum, frame):
    _on_sigterm.received = True
    raise _Terminated()


_on_sigterm.received = False


def _load(target):
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"expected package.module:function, got {target!r}")
    fn = importlib.import_module(module_name)
    for part in attribute.split("."):
        fn = getattr(fn, part)
    if not callable(fn):
        raise TypeError(f"{target} is not callable")
    return fn


def _contract_arg(text):
    if text is None:
        return None
    if text.startswith("@"):
        with open(text[1:], encoding="utf-8") as f:
            text = f.read()
    return json.loads(text)


def _parser():
    parser = argparse.ArgumentParser(
        prog="python3 -m moe_oracle",
        description="moe-oracle's fuzzer on a Python router function (docs/python.md)")
    commands = parser.add_subparsers(dest="command", required=True)
    fuzz = commands.add_parser(
        "fuzz", help="fuzz fn(logits, k) -> (ids, gates) against the oracle",
        description="Fuzz a Python router against the oracle, as `moe-oracle fuzz` does a "
                    "shared library: fn(logits, k), or fn(logits, k, family) under a contract "
                    'with "abi": "moe_route_v2" (docs/python.md, "The routing family").')
    fuzz.add_argument("target", help="package.module:function (imported from the current "
                                     "directory and sys.path)")
    fuzz.add_argument("--seconds", type=float, default=10, help="time limit (default 10)")
    fuzz.add_argument("--seed", type=int, help="seed of the case stream (default: random)")
    fuzz.add_argument("--out", default="moe-oracle-out",
                      help="where reproducers go (default ./moe-oracle-out)")
    fuzz.add_argument("--json", action="store_true", help="one JSON summary object on stdout")
    fuzz.add_argument("--keep-going", action="store_true",
                      help="count every kind to the time limit instead of stopping at the first")
    fuzz.add_argument("--contract", help="the contract as JSON, or @FILE (default: the one the "
                                         "function carries, see moe_oracle.with_contract)")
    fuzz.add_argument("--tie-order", choices=["lowest-index", "any"],
                      help="who wins an exact tie (overrides the contract's tie_order)")
    fuzz.add_argument("--experts", help="experts to draw: values and ranges, e.g. 1-64,128")
    fuzz.add_argument("--k", help="k to draw: values and ranges (default 0 to E+2 per case)")
    fuzz.add_argument("--tokens", help="batch sizes to draw: values and ranges")
    fuzz.add_argument("--family", help="moe_route_v2: the model recipes the router implements, "
                                       "e.g. deepseek-v3 or llama4,mixtral (replaces the "
                                       "contract's families)")
    fuzz.add_argument("--shrink-seconds", type=float, default=10,
                      help="time cap on shrinking each violation (default 10; 0: none)")
    fuzz.add_argument("--min-tokens", type=int, default=1000,
                      help="fewer tokens judged is insufficient coverage, exit 3 (default 1000)")
    fuzz.add_argument("--gate-factor", type=float, help="gate budget: multiple of the binary32 "
                                                        "spec's own gate error")
    fuzz.add_argument("--gate-ulp", type=float, help="gate budget: extra ulps of the exact gate")
    fuzz.add_argument("--no-analytic-floor", action="store_true",
                      help="drop the derived first-order gate bound from the budget")
    return parser


def _run(args):
    try:
        fn = _load(args.target)
        contract = _contract_arg(args.contract)
    except Exception as e:  # an import error of the user's module is usage, exit 2
        print(f"moe_oracle fuzz: cannot load {args.target}: {type(e).__name__}: {e}",
              file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        report = _fuzz.fuzz(
            fn, k=args.k, contract=contract, seconds=args.seconds, seed=args.seed, out=args.out,
            keep_going=args.keep_going, experts=args.experts, tokens=args.tokens,
            family=args.family,
            shrink_seconds=args.shrink_seconds, min_tokens=args.min_tokens,
            tie_order=args.tie_order, gate_factor=args.gate_factor, gate_ulp=args.gate_ulp,
            analytic_floor=not args.no_analytic_floor, progress=True)
    except (ValueError, TypeError, OSError) as e:  # a bad contract, shape list or --out
        print(f"moe_oracle fuzz: {e}", file=sys.stderr)
        return 2
    sys.stderr.write(str(report))
    if args.json:
        print(report.json())
    else:
        for v in report["violations"]:
            if v["reproducer"]:
                print(f"reproducer: {v['reproducer']}")
            print(v["signature"])
    if report.exit_code == 130 and _on_sigterm.received:
        return 143
    return report.exit_code


def main(argv=None):
    return _run(_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
