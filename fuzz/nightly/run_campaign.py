#!/usr/bin/env python3
"""Runs one fuzzing campaign over prebuilt binaries and writes report.json + report.html.

Part 1: `moe-oracle fuzz` on each built-in router, then on each moe_dispatch_v1 library (the
in-tree libmoe_dispatch_eigen.so, or --dispatchers). Part 2: each libFuzzer target in each
given build (ASan+UBSan, plain), then its new inputs merged into the campaign's corpus,
<out>/corpus/<target>/ (into the repository's corpus/<target>/ only with --merge-corpus),
and its crashes minimised, signed and deduplicated. Everything the campaign writes is
under --out, world-readable (files 0644, folders 0755). The state, report and corpus are
rewritten atomically after every step, so SIGINT/SIGTERM leaves them whole and rerunning
the same command resumes. scripts/campaign builds the binaries and calls this.
"""

import argparse
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import atomic_io  # noqa: E402
import campaign_state  # noqa: E402
import child_process  # noqa: E402
import corpus_merge  # noqa: E402
import crash_triage  # noqa: E402
import dispatch_fuzz  # noqa: E402
import libfuzzer_target  # noqa: E402
import report_html  # noqa: E402
import report_model  # noqa: E402
import router_fuzz  # noqa: E402

TARGETS = ["fuzz_route", "fuzz_gates", "fuzz_layer", "fuzz_capacity", "fuzz_vectors",
           "fuzz_external"]
NIGHTLY_BUDGET_S = 6 * 3600
ROUTER_SHARE = 0.25  # of the budget, for part 1; the rest goes to libFuzzer
MINIMISED_PER_CLASS = 2


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--budget", type=int, help="total fuzzing seconds (default 180, "
                   f"{NIGHTLY_BUDGET_S} with --nightly)")
    p.add_argument("--nightly", action="store_true", help="the real nightly budget")
    p.add_argument("--out", default="campaign-out", help="report, state, logs, crashes")
    p.add_argument("--repo", default=os.path.abspath(os.path.join(os.path.dirname(__file__),
                                                                  "..", "..")))
    p.add_argument("--corpus-root", help="the repository's corpus, read as seeds and grown "
                   "with --merge-corpus (default: <repo>/corpus)")
    p.add_argument("--merge-corpus", action="store_true",
                   help="merge new inputs into the repository's corpus (--corpus-root) "
                   "instead of <out>/corpus; the nightly job does, a one-off run need not")
    p.add_argument("--moe-oracle", help="path of the moe-oracle binary (part 1)")
    p.add_argument("--fuzz-build", action="append", default=[], metavar="NAME=DIR",
                   help="a libFuzzer build folder (binaries in DIR/bin), e.g. asan=build-fuzz")
    p.add_argument("--routers", help="comma-separated routers: built-in names or library "
                   "paths, NAME@moe_route_v2 for a built-in router's moe_route_v2 (default: "
                   "every built-in router, and each distinct moe_route_v2 kernel)")
    p.add_argument("--dispatchers", help="comma-separated moe_dispatch_v1 libraries to fuzz "
                   "in part 1, or none (default: the in-tree libmoe_dispatch_eigen.so beside "
                   "--moe-oracle, in ../lib)")
    p.add_argument("--targets", help="comma-separated subset of the libFuzzer targets")
    p.add_argument("--seed", type=int, help="default: the campaign's start time")
    p.add_argument("--cores", type=int, default=os.cpu_count() or 1, help="-fork=N")
    p.add_argument("--external",
                   help="a moe_route_v1 or moe_route_v2 library for fuzz_external (MOE_IMPL)")
    a = p.parse_args(argv)
    if a.budget is None:
        a.budget = NIGHTLY_BUDGET_S if a.nightly else 180
    if a.budget < 1:
        p.error("--budget must be at least 1 second")
    a.builds = []
    for spec in a.fuzz_build:
        name, sep, folder = spec.partition("=")
        if not sep or not name or not folder:
            p.error(f"--fuzz-build wants NAME=DIR, got {spec!r}")
        a.builds.append((name, os.path.abspath(folder)))
    # Absolute: the fuzzers run in the out folder, so that what they drop stays there.
    if a.moe_oracle and os.sep in a.moe_oracle:
        a.moe_oracle = os.path.abspath(a.moe_oracle)
    # Crashes become reproducers through `moe-oracle reproduce` (moe-oracle's own decoder,
    # verdict and writer), when moe-oracle is given.
    runnable = a.moe_oracle and (os.access(a.moe_oracle, os.X_OK) or shutil.which(a.moe_oracle))
    a.reproduce = [a.moe_oracle, "reproduce"] if runnable else None
    a.out = os.path.abspath(a.out)
    a.repo = os.path.abspath(a.repo)
    a.corpus_root = os.path.abspath(a.corpus_root or os.path.join(a.repo, "corpus"))
    return a


def make_plan(a):
    """The step ids, in order, with what each needs; absent binaries are left out."""
    steps = {}
    if a.moe_oracle and os.access(a.moe_oracle, os.X_OK):
        routers = (a.routers.split(",") if a.routers else
                   router_fuzz.builtin_routers(a.moe_oracle) +
                   [f"{r}@{router_fuzz.ABI_V2}" for r in
                    router_fuzz.builtin_routers(a.moe_oracle, router_fuzz.ABI_V2)])
        for r in routers:
            steps[f"router:{r}"] = {"router": r}
        for lib in dispatch_fuzz.libraries(a.dispatchers, a.moe_oracle):
            steps[f"dispatch:{lib}"] = {"dispatcher": lib}
    targets = a.targets.split(",") if a.targets else TARGETS
    for build, folder in a.builds:
        for t in targets:
            binary = os.path.join(folder, "bin", t)
            if os.access(binary, os.X_OK):
                steps[f"libfuzzer:{build}:{t}"] = {"target": t, "build": build, "binary": binary}
    return steps


def budgets(a, steps):
    """Seconds per step: ROUTER_SHARE of the budget over the routers and dispatch kernels
    (part 1), the rest over the libFuzzer runs (all of it when one part is empty). Merges,
    minimisation and start-up come on top; the docs say so."""
    n_r = sum(1 for s in steps if s.startswith(("router:", "dispatch:")))
    n_l = len(steps) - n_r
    share = ROUTER_SHARE if n_r and n_l else (1.0 if n_r else 0.0)
    per_router = max(2, int(a.budget * share / n_r)) if n_r else 0
    per_target = max(5, int(a.budget * (1 - share) / n_l)) if n_l else 0
    return per_router, per_target


def external_library(a, build_dir):
    """The library fuzz_external loads: --external, $MOE_IMPL, else an in-tree router's.

    The default build's libraries come first: a fuzz build's are compiled with coverage
    instrumentation (-fsanitize=fuzzer-no-link) and do not load into a fuzzer that does not
    export the sancov symbols, while a plain library, like a user's, always does."""
    if a.external:
        return os.path.abspath(a.external)
    if os.environ.get("MOE_IMPL"):
        return os.environ["MOE_IMPL"]
    folders = [os.path.join(build_dir, "lib")]
    if a.moe_oracle:
        folders.insert(0, os.path.join(os.path.dirname(a.moe_oracle), "..", "lib"))
    for lib in folders:
        names = sorted(os.listdir(lib)) if os.path.isdir(lib) else []
        for prefer in ("auto", "scalar", ""):
            for n in names:
                if n.startswith("libmoe_route_") and prefer in n and n.endswith(".so"):
                    return os.path.abspath(os.path.join(lib, n))
    return None


def run_libfuzzer_step(a, state, info, seconds, build_dir):
    target, build, binary = info["target"], info["build"], info["binary"]
    if target == "fuzz_external":
        lib = external_library(a, build_dir)
        if not lib:
            return {"target": target, "build": build, "status": "skipped",
                    "message": "no moe_route_v1 library: pass --external or set MOE_IMPL"}
        os.environ["MOE_IMPL"] = lib
    # Seeds come from both corpora; new inputs go to the campaign's own unless the
    # repository's is to grow (--merge-corpus), which then also takes what earlier
    # campaigns in this out folder kept.
    repo_corpus = os.path.join(a.corpus_root, target)
    own_corpus = os.path.join(a.out, "corpus", target)
    if a.merge_corpus:
        dest, known, extra = repo_corpus, (), (own_corpus,)
    else:
        dest, known, extra = own_corpus, (repo_corpus,), ()
    corpus_merge.clean_stale(dest)
    entry = libfuzzer_target.fuzz_target(binary, target, build, seconds, repo=a.repo,
                                         corpus_dirs=[repo_corpus, own_corpus], out_dir=a.out,
                                         cores=a.cores)
    if target == "fuzz_external":
        entry["library"] = os.environ["MOE_IMPL"]
    # Shown relative to the report (own corpus) or to the checkout (corpus/<target>).
    inside_repo = os.path.commonpath([dest, a.repo]) == a.repo
    entry["corpus_dir"] = (os.path.relpath(dest, a.out) if not a.merge_corpus else
                           os.path.relpath(dest, a.repo) if inside_repo else dest)
    entry["corpus_merged_into_repo"] = bool(a.merge_corpus)
    rss = libfuzzer_target.RSS_LIMIT_MB.get(target, 2560)
    if not child_process.STOP.requested:
        entry.update(corpus_merge.merge_new_inputs(
            binary, target, dest, entry["work_corpus"], out_dir=a.out,
            run_id=f"{build}-{target}", rss_limit_mb=rss, timeout=max(120, seconds),
            known_dirs=known, extra_inputs=extra))
    groups = crash_triage.group_by_signature(binary, target, entry["artifacts"], out_dir=a.out,
                                             rss_limit_mb=rss)
    # Minimisation is the slow part: at most MINIMISED_PER_CLASS signatures of one bug
    # class are minimised; the others keep their smallest raw input (still deduplicated,
    # still turned into a reproducer). Once the step's triage time is spent, the rest are
    # only listed with their raw input.
    deadline = time.monotonic() + max(60, seconds)
    per_class = {}
    crashes = []
    for signature, artifacts in groups.items():
        if child_process.STOP.requested:
            break
        cls = crash_triage.bug_class(signature)
        per_class[cls] = per_class.get(cls, 0) + 1
        in_time = time.monotonic() < deadline
        minimize = per_class[cls] <= MINIMISED_PER_CLASS and in_time
        c = crash_triage.triage(binary, target, build, signature, artifacts, out_dir=a.out,
                                moe_oracle=a.moe_oracle or "moe-oracle", minimize_runs=10000,
                                minimize_seconds=min(30, max(5, seconds // 4)),
                                rss_limit_mb=rss, reproduce=a.reproduce,
                                minimize=minimize, convert=in_time)
        campaign_state.remember_signature(state, signature)
        crashes.append(c)
    entry["crashes"] = crashes
    if not child_process.STOP.requested:  # every artifact is triaged: the next run starts clean
        shutil.rmtree(os.path.dirname(entry["artifacts"][0]) if entry["artifacts"] else "",
                      ignore_errors=True)
    if child_process.STOP.requested:
        entry["status"] = "interrupted"
    return entry


def write_report(a, state, interrupted):
    report = report_model.build(state, interrupted=interrupted)
    atomic_io.write_json(os.path.join(a.out, "report.json"), report)
    atomic_io.write_text(os.path.join(a.out, "report.html"), report_html.render(report))
    # Logs, copied reproducers, crash inputs and the corpus were written by the fuzzers
    # too: all of it readable by others (work/ is the campaign's scratch space).
    atomic_io.make_readable(a.out, skip=("work",))
    return report


def print_summary(a, report):
    t = report["totals"]
    v = t["verdicts"]
    print(f"campaign {report['campaign_id']}: "
          f"{'complete' if report['complete'] else 'INTERRUPTED (rerun to resume)'}")
    print(f"  routers: {len(report['routers'])} run, {t['router_cases']} cases "
          f"(exact {v['exact']}, acceptable {v['acceptable']}, violation {v['violation']})")
    where = ("corpus/ (--merge-corpus)" if report.get("corpus", {}).get("merged_into_repo")
             else os.path.join(a.out, "corpus"))
    print(f"  dispatch kernels: {len(report['dispatchers'])} run, "
          f"{t['dispatch_cases']} cases, {t['dispatch_slots']} slots judged exactly")
    print(f"  libFuzzer: {len(report['targets'])} runs, {t['libfuzzer_execs']} execs, "
          f"{t['corpus_added']} new corpus inputs in {where}")
    for tg in report["targets"]:
        print(f"    {tg['build']:>5} {tg['target']:<14} {tg.get('execs_per_s', 0):>10} exec/s "
              f"ft {tg.get('features', 0):>6} corpus {tg.get('corpus_files', 0)}")
    print(f"  violations: {t['violations']} signature(s), {t['new_violations']} new; "
          f"{t['failed_steps']} step(s) failed (error or hang)")
    for viol in report["violations"]:
        print(f"    {viol['signature']}  ({viol.get('count', 1)} input(s))  "
              f"{viol.get('command', '')}")
    print(f"report: {os.path.join(a.out, 'report.html')}")


def main(argv):
    a = parse_args(argv)
    known = router_fuzz.builtin_routers(a.moe_oracle) if a.routers and a.moe_oracle else []
    for r in (a.routers.split(",") if a.routers and a.moe_oracle else []):
        why = router_fuzz.unknown_router(r, known)
        if why:
            print(f"run_campaign: --routers {why}", file=sys.stderr)
            return 2
    for lib in dispatch_fuzz.libraries(a.dispatchers, a.moe_oracle) if a.dispatchers else []:
        why = dispatch_fuzz.missing_library(lib)
        if why:
            print(f"run_campaign: --dispatchers {why}", file=sys.stderr)
            return 2
    os.umask(0o022)  # the fuzzers' own files (logs, corpus, crashes) are readable by all
    os.makedirs(a.out, exist_ok=True)
    child_process.STOP.install()
    steps = make_plan(a)
    if not steps:
        print("run_campaign: nothing to run: no moe-oracle binary and no libFuzzer build "
              "(pass --moe-oracle and/or --fuzz-build NAME=DIR)", file=sys.stderr)
        return 2
    seed = a.seed if a.seed is not None else int(time.time()) % 2**31
    state, resumed = campaign_state.load_or_start(a.out, budget_s=a.budget, seed=seed,
                                                  plan=list(steps))
    if resumed:
        print(f"resuming campaign {state['campaign_id']}: "
              f"{len(state['steps'])}/{len(steps)} steps already done", file=sys.stderr)
    state["merge_corpus"] = bool(a.merge_corpus)
    campaign_state.save(a.out, state)
    per_router, per_target = budgets(a, steps)
    build_dirs = dict(a.builds)
    for step_id, info in steps.items():
        if child_process.STOP.requested:
            break
        if step_id in state["steps"]:
            continue
        print(f"[{time.strftime('%H:%M:%S')}] {step_id}", file=sys.stderr, flush=True)
        if "router" in info or "dispatcher" in info:
            entry = (router_fuzz.fuzz_router(a.moe_oracle, info["router"], per_router,
                                             state["seed"], a.out, jobs=a.cores)
                     if "router" in info else
                     dispatch_fuzz.fuzz_dispatcher(a.moe_oracle, info["dispatcher"], per_router,
                                                   state["seed"], a.out))
            for v in entry.get("violations", []):
                campaign_state.remember_signature(state, v["signature"])
                v["command"] = (f"{a.moe_oracle} replay {os.path.join(a.out, v['reproducer'])}"
                                if v.get("reproducer") else entry["command"])
        else:
            entry = run_libfuzzer_step(a, state, info, per_target, build_dirs[info["build"]])
        if entry.get("status") == "interrupted":
            break  # not recorded: the resumed run redoes this step from its work corpus
        campaign_state.finish_step(a.out, state, step_id, entry)
        write_report(a, state, interrupted=False)
    interrupted = child_process.STOP.requested
    if not interrupted:
        report = report_model.build(state, interrupted=False)
        campaign_state.complete(a.out, state, {"violations": report["totals"]["violations"]})
    report = write_report(a, state, interrupted)
    print_summary(a, report)
    if interrupted:
        return 128 + (child_process.STOP.signum or 2)
    return 1 if report["totals"]["new_violations"] or report["totals"]["failed_steps"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
