"""The pytest plugin (moe_oracle.pytest_plugin) as a kernel repository uses it: a test file
with the moe_fuzz fixture, run by a child pytest that loads the plugin with -p, as from a
build tree (the install test, python.install, checks the entry point)."""

import pathlib
import time

pytest_plugins = ["pytester"]

HERE = pathlib.Path(__file__).resolve().parent

# The kernel repository's test file: this folder's NumPy routers under the fixture.
TESTS = f"""
import sys
sys.path.insert(0, {str(HERE)!r})
import routers
from moe_oracle import Unsupported


def test_correct(moe_fuzz):
    report = moe_fuzz(routers.spec_router, contract=routers.CONTRACT, seconds=600,
                      min_tokens=100)  # a loaded machine judges fewer in 0.5 s
    assert report.ok and report["violations"] == []
    print("seed used:", report["seed"])


def test_tie_bug(moe_fuzz):
    moe_fuzz(routers.tie_higher_index, contract=routers.CONTRACT, experts="2-8", tokens="1-4")


def test_abstains(moe_fuzz):
    def never(logits, k):
        raise Unsupported("no shape at all")
    moe_fuzz(never, contract=routers.CONTRACT)
"""


def run(pytester, *args):
    pytester.makepyfile(test_kernel=TESTS)
    return pytester.runpytest_subprocess("-p", "moe_oracle.pytest_plugin", "-p",
                                         "no:cacheprovider", "-s", *args)


def test_a_correct_router_passes_and_the_command_line_wins(pytester):
    start = time.monotonic()
    # The test asks for 600 s; --moe-seconds 1 on the command line overrides it.
    result = run(pytester, "-k", "correct", "--moe-seconds", "1", "--moe-seed", "7")
    result.assert_outcomes(passed=1)
    assert time.monotonic() - start < 60
    result.stdout.fnmatch_lines(["moe-oracle: seed 7 (rerun with --moe-seed 7)",
                                 "*seed used: 7*"])


def test_the_seed_is_random_and_printed_when_not_given(pytester):
    result = run(pytester, "-k", "correct", "--moe-seconds", "0.5")
    result.assert_outcomes(passed=1)
    header = [line for line in result.outlines if line.startswith("moe-oracle: seed ")]
    used = [line for line in result.outlines if "seed used: " in line]
    assert len(header) == 1 and len(used) == 1
    assert header[0].split()[2] == used[0].split("seed used: ")[1].split()[0]


def test_a_tie_bug_fails_with_its_explanation_and_leaves_the_reproducer(pytester, tmp_path):
    out = tmp_path / "findings"
    result = run(pytester, "-k", "tie_bug", "--moe-seconds", "10", "--moe-seed", "1",
                 "--moe-out", str(out))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["moe-oracle: routers.tie_higher_index-tie-higher-index*",
                                 f"reproducers in {out}",
                                 "rerun: --moe-seed 1 --moe-seconds 10"])
    reproducers = list(out.glob("*.json"))
    assert reproducers, f"no reproducer under {out}"


def test_insufficient_coverage_fails_saying_so(pytester):
    result = run(pytester, "-k", "abstains", "--moe-seconds", "1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*moe-oracle: insufficient coverage (exit code 3)*"])
