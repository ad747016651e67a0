"""Part 2 of a campaign: one libFuzzer target in one build, for a fixed time.

New inputs go to a work corpus in the campaign's folder (never straight into a corpus: the
campaign merges them afterwards, minimised, into <out>/corpus/<target>/, or into
corpus/<target>/ with --merge-corpus); crashes go to a per-run artifact folder.
-fork keeps fuzzing after a crash, so one bug does not end the night.
"""

import glob
import os

import child_process
from libfuzzer_log import LogSummary

# fuzz_vectors parses untrusted JSON: a size that claims gigabytes must be refused, not
# allocated. The RSS limit turns a missing check into a reported crash ("oom").
RSS_LIMIT_MB = {"fuzz_vectors": 2048}
ARTIFACT_PREFIXES = ("crash-", "leak-", "timeout-", "oom-", "slow-unit-")


def dictionary_for(repo, target):
    """fuzz/dict/<target>.dict, else the shared float-specials dictionary, else None."""
    folder = os.path.join(repo, "fuzz", "dict")
    for name in (f"{target}.dict", f"{target.removeprefix('fuzz_')}.dict", "floats.dict",
                 "common.dict", "moe.dict"):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path
    found = sorted(glob.glob(os.path.join(folder, "*.dict")))
    return found[0] if len(found) == 1 else None


def fuzz_target(binary, target, build, seconds, *, repo, corpus_dirs, out_dir, cores):
    """Runs the target; returns its report entry with figures and raw crash files.

    corpus_dirs are read as seeds (the repository's corpus, the campaign's); libFuzzer
    writes only into the first folder it is given, the work corpus."""
    run_id = f"{build}-{target}"
    work_corpus = os.path.join(out_dir, "work", "corpus", run_id)
    artifacts = os.path.join(out_dir, "work", "artifacts", run_id)
    os.makedirs(work_corpus, exist_ok=True)
    os.makedirs(artifacts, exist_ok=True)
    cmd = [binary, f"-max_total_time={seconds}", "-use_value_profile=1", "-print_final_stats=1",
           f"-artifact_prefix={artifacts}/", "-timeout=25"]
    if cores > 1:
        cmd += [f"-fork={cores}", "-ignore_crashes=1", "-ignore_timeouts=1", "-ignore_ooms=1"]
    cmd.append(f"-rss_limit_mb={RSS_LIMIT_MB.get(target, 2560)}")
    dictionary = dictionary_for(repo, target)
    if dictionary:
        cmd.append(f"-dict={dictionary}")
    cmd += [work_corpus] + [d for d in corpus_dirs if os.path.isdir(d)]
    log = os.path.join(out_dir, "logs", f"libfuzzer-{run_id}.log")
    summary = LogSummary()
    outcome = child_process.run(cmd, log_path=log, timeout=seconds + 120, on_line=summary.feed,
                                cwd=out_dir)
    entry = {"target": target, "build": build, "binary": binary, "command": " ".join(cmd),
             "log": os.path.relpath(log, out_dir), "exit_code": outcome.rc,
             "wall_s": round(outcome.wall, 2), "budget_s": seconds,
             "dictionary": os.path.relpath(dictionary, repo) if dictionary else None}
    entry.update(summary.summary(outcome.wall))
    entry["status"] = ("interrupted" if outcome.interrupted else
                       "hung" if outcome.timed_out else "ran")
    entry["artifacts"] = sorted(
        os.path.join(artifacts, f) for f in os.listdir(artifacts)
        if f.startswith(ARTIFACT_PREFIXES))
    entry["work_corpus"] = work_corpus
    return entry
