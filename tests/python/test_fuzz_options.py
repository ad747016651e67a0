"""The fuzz run's options exist once, in the table moe_oracle._core.fuzz_options() exports
(moe/fuzz/fuzz_request.hpp): the command and python -m moe_oracle build their options from
it, the binding reads its keywords through it, and these tests hold the Python functions'
keyword arguments to it, name and default."""

import inspect

import pytest

import moe_oracle
from moe_oracle import __main__ as main
from moe_oracle import _core

# What a function takes besides the run's options: the function under test, its contract and
# the name in the reports.
NOT_OPTIONS = {"fn", "contract", "name"}
FUNCTIONS = {"fuzz": moe_oracle.fuzz, "fuzz_dispatch": moe_oracle.fuzz_dispatch,
             "fuzz_layer": moe_oracle.fuzz_layer}


def keyword_mismatches(fn, where, options):
    """Each way fn's keyword arguments differ from the table's rows for `where`: a keyword
    on one side only, or another default."""
    table = {o["keyword"]: o["python_default"] for o in options if where in o["where"]}
    params = {name: p for name, p in inspect.signature(fn).parameters.items()
              if name not in NOT_OPTIONS}
    problems = [f"{name}: a keyword of {where} that the table does not have"
                for name in sorted(set(params) - set(table))]
    problems += [f"{name}: in the table for {where}, not a keyword of it"
                 for name in sorted(set(table) - set(params))]
    problems += [f"{name}: default {params[name].default!r}, the table's {table[name]}"
                 for name in sorted(set(params) & set(table))
                 if repr(params[name].default) != table[name]]
    return problems


@pytest.mark.parametrize("where", sorted(FUNCTIONS))
def test_every_keyword_is_the_tables(where):
    assert keyword_mismatches(FUNCTIONS[where], where, _core.fuzz_options()) == []


def test_a_keyword_on_one_side_only_is_found():
    options = _core.fuzz_options()

    def added(fn, seconds=60, seed=None, out=None, keep_going=False, *, shrink_seconds=10,
              min_tokens=1000, max_cases=0, progress=False, tokens=None, k=None, experts=None,
              block=None, capacity=None, brand_new=1, contract=None, name=None):
        pass

    assert keyword_mismatches(added, "fuzz_dispatch", options) == [
        "brand_new: a keyword of fuzz_dispatch that the table does not have"]
    removed = [o for o in options if o["keyword"] != "capacity"]
    assert keyword_mismatches(moe_oracle.fuzz_dispatch, "fuzz_dispatch", removed) == [
        "capacity: a keyword of fuzz_dispatch that the table does not have"]
    assert keyword_mismatches(moe_oracle.fuzz_layer, "fuzz_dispatch", options)[0].startswith(
        "family: a keyword of fuzz_dispatch")
    other_default = [dict(o, python_default="30") if o["keyword"] == "seconds" else o
                     for o in options]
    assert keyword_mismatches(moe_oracle.fuzz, "fuzz", other_default) == [
        "seconds: default 60, the table's 30"]


def fuzz_subparser():
    parser = main._parser()
    return next(a for a in parser._subparsers._group_actions[0].choices.values())


def test_python_m_options_are_the_tables_with_the_commands_defaults():
    actions = {a.option_strings[0]: a for a in fuzz_subparser()._actions if a.option_strings}
    rows = {o["flag"]: o for o in _core.fuzz_options() if "main" in o["where"]}
    assert set(actions) - {"-h", "--contract"} == set(rows)
    for flag, row in rows.items():
        expected = False if row["kind"] == "flag" else row["default"]
        assert actions[flag].default == expected, flag
    # The command's defaults, as `moe-oracle fuzz --help` says them.
    assert actions["--seconds"].default == 10 and actions["--min-tokens"].default == 1000
    assert actions["--out"].default == "moe-oracle-out" and actions["--seed"].default is None


def test_every_command_flag_is_in_its_help(moe_oracle_bin):
    import subprocess
    help_text = subprocess.run([moe_oracle_bin, "fuzz", "--help"], capture_output=True,
                               text=True, check=True).stdout
    for o in _core.fuzz_options():
        if "command" in o["where"]:
            assert o["flag"] in help_text, o["flag"]


def test_the_binding_refuses_a_keyword_the_table_does_not_give_it(tmp_path):
    with pytest.raises(TypeError, match="block"):
        _core.fuzz(lambda logits, k: None, Exception, "r", "{}", block="4")
    with pytest.raises(ValueError, match="seconds: 0.0 must be > 0"):
        _core.fuzz(lambda logits, k: None, Exception, "r", "{}", seconds=0.0,
                   out=str(tmp_path))
