#!/usr/bin/env python3
"""End-to-end test of the campaign runner on a toy libFuzzer target and a fake moe-oracle.

Runs the real run_campaign.py with the real libFuzzer (-fork, -merge, -minimize_crash),
under umask 077 (so that the modes it sets are its own doing):
  1. a full short campaign: report, deduplicated crash with reproducer, new inputs merged
     into the campaign's own corpus (<out>/corpus) while the repository's corpus is left
     untouched, every file it wrote world-readable (0644, folders 0755);
  2. a second campaign in the same folder: the same bug is reported as known, not new;
  3. a campaign with --merge-corpus stopped by SIGTERM mid-fuzzing: state, report and
     corpus are whole, and rerunning resumes it without redoing the finished steps and
     merges into the repository's corpus.
Exits 77 (ctest skip) when clang-14 with libFuzzer is not installed.

usage: campaign_runner_test.py REPO
"""

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

SKIP = 77
REPO = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "."
RUNNER = os.path.join(REPO, "fuzz", "nightly", "run_campaign.py")
HERE = os.path.join(REPO, "tests", "fuzz_campaign")
TOY_SIGNATURE = "moe-oracle: toy-planted-bug-E3-k1"
ROUTER_SIGNATURE = "moe-oracle: scalar-logits-tie-E5-k2"
SEED_NAME = "seed-MoX"  # one seed in the repository's corpus


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def campaign_cmd(tmp, out,
                 routers="scalar-probs,scalar-logits,avx512-logits,scalar-probs@moe_route_v2",
                 builds=True, merge=False):
    cmd = [sys.executable, RUNNER, "--budget", "8", "--out", out, "--corpus-root",
           os.path.join(tmp, "corpus"), "--moe-oracle", os.path.join(HERE, "fake_moe_oracle.py"),
           "--routers", routers, "--targets", "fuzz_route", "--cores", "2", "--seed", "7"]
    if builds:
        cmd += ["--fuzz-build", f"toy={tmp}/toy"]
    if merge:
        cmd.append("--merge-corpus")
    return cmd


def repo_corpus(tmp):
    folder = os.path.join(tmp, "corpus", "fuzz_route")
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def modes_are_public(out):
    """Every file under out (work/ excepted) is 0644 and every folder 0755; the first
    offender, or None."""
    for root, dirs, files in os.walk(out):
        if root == out:
            dirs[:] = [d for d in dirs if d != "work"]
        for name, want in [(d, 0o755) for d in dirs] + [(f, 0o644) for f in files]:
            path = os.path.join(root, name)
            mode = stat.S_IMODE(os.lstat(path).st_mode)
            if mode != want:
                return f"{os.path.relpath(path, out)} has mode {mode:o}, not {want:o}"
    mode = stat.S_IMODE(os.stat(out).st_mode)
    return None if mode == 0o755 else f"the out folder has mode {mode:o}"


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def no_merge_leftovers(tmp):
    return not [n for n in os.listdir(os.path.join(tmp, "corpus")) if n.startswith(".")]


def full_campaign(tmp):
    out = os.path.join(tmp, "out")
    run = subprocess.run(campaign_cmd(tmp, out), capture_output=True, text=True, timeout=300,
                         cwd=tmp)
    check(run.returncode == 1, f"new violations must exit 1, got {run.returncode}: "
          f"{run.stderr[-2000:]}")
    r = load(os.path.join(out, "report.json"))
    check(r["complete"] and not r["pending"], "campaign incomplete")
    status = {x["router"]: x["status"] for x in r["routers"]}
    check(status == {"scalar-probs": "clean", "scalar-logits": "violation",
                     "avx512-logits": "unavailable", "scalar-probs@moe_route_v2": "clean"},
          f"router statuses {status}")
    commands = {x["router"]: x["command"] for x in r["routers"]}
    v2 = commands["scalar-probs@moe_route_v2"].split()
    check(v2[v2.index("--impl") + 1] == "scalar-probs"
          and v2[v2.index("--abi") + 1] == "moe_route_v2"
          and "--abi" not in commands["scalar-probs"].split(), f"router commands {commands}")
    t = r["targets"][0]
    check(t["execs"] > 1000 and t["features"] > 0 and len(t["series"]) >= 2,
          f"libFuzzer figures missing: {t}")
    sigs = {v["signature"]: v for v in r["violations"]}
    check(ROUTER_SIGNATURE in sigs, "router violation not reported")
    router_rep = os.path.join(out, sigs[ROUTER_SIGNATURE]["reproducer"])
    check(os.path.isfile(router_rep), "router reproducer not copied beside the report")
    check(TOY_SIGNATURE in sigs, f"planted crash not found: {list(sigs)}")
    toy = sigs[TOY_SIGNATURE]
    check(len([v for v in r["violations"] if v["signature"] == TOY_SIGNATURE]) == 1,
          "crashes not deduplicated")
    check(toy["input_bytes"] == 3, f"crash not minimised to 'MoE': {toy['input_bytes']} bytes")
    check(toy["reproducer"].endswith(".json") and os.path.isfile(
        os.path.join(out, toy["reproducer"])), "crash reproducer JSON not kept")
    own = os.path.join(out, "corpus", "fuzz_route")
    check(t["added"] > 0 and os.path.isdir(own) and len(os.listdir(own)) == t["corpus_files"],
          "new inputs not merged into the campaign's corpus")
    check(t["corpus_dir"] == "corpus/fuzz_route" and not t["corpus_merged_into_repo"]
          and not r["corpus"]["merged_into_repo"], f"corpus destination: {t}")
    check(repo_corpus(tmp) == [SEED_NAME], f"the repository's corpus changed without "
          f"--merge-corpus: {repo_corpus(tmp)}")
    check(no_merge_leftovers(tmp), "merge temp folder left behind")
    check(not [n for n in os.listdir(tmp) if n.startswith(("crash-", "timeout-", "oom-"))],
          "a fuzzer wrote outside the out folder")
    bad_mode = modes_are_public(out)
    check(bad_mode is None, f"report files not world-readable: {bad_mode}")
    check(not os.path.exists(os.path.join(out, "work", "artifacts", "toy-fuzz_route")),
          "triaged artifacts left to be triaged again")
    with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
        html = f.read()
    check(TOY_SIGNATURE in html and "<svg" in html, "HTML report lacks the crash or the plot")
    for want in ('href="logs/router-scalar-probs.log"',
                 'href="logs/router-scalar-probs_moe_route_v2.log"',
                 'href="logs/libfuzzer-toy-fuzz_route.log"',
                 f'href="{sigs[ROUTER_SIGNATURE]["reproducer"]}"', 'id="next-steps"',
                 'id="verdict-legend"', 'id="coverage"'):
        check(want in html, f"HTML report lacks {want!r}")
    return r["campaign_id"]


def second_campaign_knows_the_bug(tmp, first_id):
    out = os.path.join(tmp, "out")
    run = subprocess.run(campaign_cmd(tmp, out, routers="scalar-logits", builds=False),
                         capture_output=True, text=True, timeout=120, cwd=tmp)
    check(run.returncode == 0, f"a known violation must not fail the night: {run.returncode}")
    r = load(os.path.join(out, "report.json"))
    check(r["campaign_id"] != first_id, "a finished campaign must not be resumed")
    v = [x for x in r["violations"] if x["signature"] == ROUTER_SIGNATURE]
    check(len(v) == 1 and not v[0]["new"] and v[0]["first_seen"] == first_id,
          f"known bug not recognised: {v}")


def interrupted_campaign_resumes(tmp):
    out = os.path.join(tmp, "out-interrupted")
    child = subprocess.Popen(campaign_cmd(tmp, out, merge=True), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=tmp)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait for the routers, then stop mid-libFuzzer
        state = load(os.path.join(out, "state.json")) if os.path.exists(
            os.path.join(out, "state.json")) else {}
        if len(state.get("steps", {})) == 3:
            break
        time.sleep(0.2)
    time.sleep(2.0)
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=60)
    check(child.returncode == 128 + signal.SIGTERM, f"SIGTERM exit {child.returncode}: {err}")
    r = load(os.path.join(out, "report.json"))
    check(r["interrupted"] and not r["complete"], "report does not say it was interrupted")
    check(r["pending"] == ["libfuzzer:toy:fuzz_route"], f"pending {r['pending']}")
    check(not load(os.path.join(out, "state.json"))["complete"], "state marked complete")
    check(no_merge_leftovers(tmp), "corpus has a half-done merge")
    router_log = os.path.join(out, "logs", "router-scalar-probs.log")
    before = os.path.getmtime(router_log)
    check(repo_corpus(tmp) == [SEED_NAME], "corpus merged before the step finished")
    run = subprocess.run(campaign_cmd(tmp, out, merge=True), capture_output=True, text=True,
                         timeout=300, cwd=tmp)
    check("resuming campaign" in run.stderr, f"did not resume: {run.stderr[-1000:]}")
    check(os.path.getmtime(router_log) == before, "a finished step was run again")
    r2 = load(os.path.join(out, "report.json"))
    check(r2["complete"] and r2["campaign_id"] == r["campaign_id"] and r2["resumed"] == 1,
          "resumed campaign did not complete as the same campaign")
    t = r2["targets"][0]
    check(r2["corpus"]["merged_into_repo"] and t["corpus_merged_into_repo"] and t["added"] > 0
          and len(repo_corpus(tmp)) == t["corpus_files"] > 1 and SEED_NAME in repo_corpus(tmp),
          f"--merge-corpus did not grow the repository's corpus: {t}")
    check(no_merge_leftovers(tmp), "merge temp folder left behind")


def main():
    clang = shutil.which("clang-14") or shutil.which("clang")
    if not clang:
        print("SKIP: clang-14 with libFuzzer is not installed (scripts/setup-deps)")
        return SKIP
    os.umask(0o077)
    with tempfile.TemporaryDirectory(prefix="moe-campaign-") as tmp:
        os.makedirs(os.path.join(tmp, "toy", "bin"))
        os.makedirs(os.path.join(tmp, "corpus", "fuzz_route"))
        with open(os.path.join(tmp, "corpus", "fuzz_route", SEED_NAME), "wb") as f:
            f.write(b"MoX")
        build = subprocess.run([clang, "-g", "-O1", "-fsanitize=fuzzer,address",
                                os.path.join(HERE, "toy_fuzz_target.c"), "-o",
                                os.path.join(tmp, "toy", "bin", "fuzz_route")],
                               capture_output=True, text=True)
        if build.returncode != 0:
            print(f"SKIP: cannot link a libFuzzer target with {clang}: {build.stderr[-500:]}")
            return SKIP
        first = full_campaign(tmp)
        print("ok: full campaign")
        second_campaign_knows_the_bug(tmp, first)
        print("ok: second campaign knows the bug")
        interrupted_campaign_resumes(tmp)
        print("ok: SIGTERM leaves state whole and the rerun resumes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
