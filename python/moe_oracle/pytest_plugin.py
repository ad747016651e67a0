"""The pytest plugin moe_oracle: the fixture ``moe_fuzz`` and the options ``--moe-seconds``,
``--moe-seed`` and ``--moe-out`` (docs/python.md, "The pytest plugin").

Installed with the package (entry point group pytest11) it loads by itself; from a build tree
``-p moe_oracle.pytest_plugin`` loads it. A kernel repository's test::

    def test_router(moe_fuzz):
        moe_fuzz(route, contract={"array": "torch"})

fails with the campaign's full explanation when a violation is found (its reproducer left in
``--moe-out``) and when coverage is insufficient, and returns the FuzzReport otherwise.
"""

import random

import pytest

from ._fuzz import fuzz

SECONDS = 10.0  # --moe-seconds' default: short enough for every commit's CI


def pytest_addoption(parser):
    group = parser.getgroup("moe_oracle", "moe-oracle (the moe_fuzz fixture)")
    # The defaults are None so that the fixture can tell an option given on the command line,
    # which wins over the test's own keyword (a nightly job's --moe-seconds 600), from none.
    group.addoption("--moe-seconds", type=float, default=None, metavar="S",
                    help=f"time limit of each moe_fuzz campaign (default: the test's "
                         f"seconds=, else {SECONDS:g})")
    group.addoption("--moe-seed", type=int, default=None, metavar="N",
                    help="seed of every moe_fuzz campaign (default: random, printed in the "
                         "header and in each failure)")
    group.addoption("--moe-out", default=None, metavar="DIR",
                    help="where reproducers go (default: the test's tmp_path/moe-oracle-out)")


def pytest_configure(config):
    # One seed for the session, drawn here so the header and every failure can print it.
    seed = config.getoption("moe_seed")
    config._moe_seed_given = seed is not None
    config._moe_seed = seed if seed is not None else random.SystemRandom().randrange(2**32)


def pytest_report_header(config):
    return f"moe-oracle: seed {config._moe_seed} (rerun with --moe-seed {config._moe_seed})"


def _chosen(config, option, kwargs, key, default):
    """The command line's value, else the test's keyword, else the default."""
    given = config.getoption(option)
    if given is not None:
        return given
    return kwargs.get(key, default)


@pytest.fixture
def moe_fuzz(request, tmp_path):
    """``moe_fuzz(fn, contract=None, **kwargs)``: ``moe_oracle.fuzz`` with the time, seed and
    output folder from the command line (or the test's own ``seconds=``, ``seed=``, ``out=``
    where the command line gives none); every other keyword (``k``, ``experts``, ``tokens``,
    ``family``, ``keep_going``, ...) goes to ``moe_oracle.fuzz`` as given. Returns the
    FuzzReport of a clean run; fails the test otherwise."""
    config = request.config

    def run(fn, contract=None, **kwargs):
        kwargs["seconds"] = _chosen(config, "moe_seconds", kwargs, "seconds", SECONDS)
        kwargs["out"] = str(_chosen(config, "moe_out", kwargs, "out",
                                    tmp_path / "moe-oracle-out"))
        if config._moe_seed_given or "seed" not in kwargs:
            kwargs["seed"] = config._moe_seed
        seed = kwargs["seed"]
        report = fuzz(fn, contract=contract, **kwargs)
        rerun = f"rerun: --moe-seed {seed} --moe-seconds {kwargs['seconds']:g}"
        if report.exit_code == 130:
            raise KeyboardInterrupt  # Ctrl-C in the campaign stops pytest, as anywhere else
        if report.exit_code == 3:
            pytest.fail(f"moe-oracle: insufficient coverage (exit code 3): too few tokens "
                        f"judged to trust a pass\n{report}\n{rerun}", pytrace=False)
        if report.exit_code != 0:
            # str(report): each kind's full report, its signature line, the summary.
            pytest.fail(f"{report}\nreproducers in {kwargs['out']}\n{rerun}", pytrace=False)
        return report

    return run
