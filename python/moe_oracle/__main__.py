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

from . import _core, _fuzz


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


_TYPES = {"number": float, "whole": int, "text": str}


def _main_options():
    """The options of `python -m moe_oracle fuzz`: the fuzz run's one table
    (moe/fuzz/fuzz_request.hpp), the rows marked for it."""
    return [o for o in _core.fuzz_options() if "main" in o["where"]]


def _argument(option):
    """argparse's add_argument keywords for one row of the table."""
    help_text = option["help"].replace("%", "%%")
    if option["kind"] == "flag":
        return {"action": "store_true", "help": help_text}
    argument = {"type": _TYPES[option["kind"]], "default": option["default"], "help": help_text}
    if option["choices"]:
        argument["choices"] = option["choices"]
    return argument


def _keywords(args):
    """The keywords of moe_oracle.fuzz from the parsed options (--json is the printing's)."""
    keywords = {}
    for option in _main_options():
        if not option["keyword"]:
            continue
        value = getattr(args, option["flag"][2:].replace("-", "_"))
        keywords[option["keyword"]] = (not value) if option["inverted"] else value
    return keywords


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
    fuzz.add_argument("--contract", help="the contract as JSON, or @FILE (default: the one the "
                                         "function carries, see moe_oracle.with_contract)")
    for option in _main_options():
        fuzz.add_argument(option["flag"], **_argument(option))
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
        report = _fuzz.fuzz(fn, contract=contract, progress=True, **_keywords(args))
    except (ValueError, TypeError, OSError) as e:  # a bad contract, shape list or --out
        print(f"moe_oracle fuzz: {e}", file=sys.stderr)
        return 2
    # The command's own printer (printOutcome), so the two doors print alike.
    terminated = report.exit_code == 130 and _on_sigterm.received
    return report.print(args.json, signal.SIGTERM if terminated else 0)


def main(argv=None):
    return _run(_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
