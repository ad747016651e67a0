"""Merges a run's new inputs into a corpus folder, keeping only those that add coverage.

The folder is the campaign's own, <out>/corpus/<target>/, unless the campaign was told to
grow the repository's corpus (--merge-corpus): then it is corpus/<target>/. A campaign
without that flag leaves the source tree as it found it.

`-merge=1 TMP WORK...` adds to TMP the smallest inputs of WORK that cover a feature TMP
does not. TMP starts as hard links to the destination and to every other corpus whose
coverage already counts (the repository's, when the destination is the campaign's), so
existing seeds and reproducers are never dropped nor copied twice. Each added file is then
renamed into the destination (one atomic rename per file; libFuzzer names files by the
SHA-1 of their bytes, so a name already there means the same bytes). An interrupted merge
therefore leaves the corpus whole; the leftover temp folder is removed by the next run.
"""

import os
import shutil

import child_process


def temp_dir_for(corpus_dir):
    parent, name = os.path.split(os.path.abspath(corpus_dir))
    return os.path.join(parent, f".{name}.merge-tmp")


def clean_stale(corpus_dir):
    shutil.rmtree(temp_dir_for(corpus_dir), ignore_errors=True)


def corpus_stats(corpus_dir):
    files = [os.path.join(corpus_dir, f) for f in os.listdir(corpus_dir)] if os.path.isdir(
        corpus_dir) else []
    files = [f for f in files if os.path.isfile(f)]
    return {"corpus_files": len(files), "corpus_bytes": sum(os.path.getsize(f) for f in files)}


def _link_into(folder, tmp, existing):
    for name in os.listdir(folder) if os.path.isdir(folder) else []:
        src = os.path.join(folder, name)
        if os.path.isfile(src) and name not in existing:
            existing.add(name)
            try:
                os.link(src, os.path.join(tmp, name))
            except OSError:
                shutil.copy2(src, os.path.join(tmp, name))


def merge_new_inputs(binary, target, corpus_dir, work_corpus, *, out_dir, run_id, rss_limit_mb,
                     timeout, known_dirs=(), extra_inputs=()):
    """Merges work_corpus (and the folders in extra_inputs) into corpus_dir, counting the
    coverage of corpus_dir and of known_dirs as already there.

    Returns {"added", "corpus_files", "corpus_bytes", "merge_status"}."""
    os.makedirs(corpus_dir, exist_ok=True)
    before = corpus_stats(corpus_dir)
    inputs = [d for d in (work_corpus, *extra_inputs) if os.path.isdir(d) and os.listdir(d)]
    if not inputs:
        return {"added": 0, "merge_status": "nothing new", **before}
    tmp = temp_dir_for(corpus_dir)
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    existing = set()
    for folder in (corpus_dir, *known_dirs):
        _link_into(folder, tmp, existing)
    control = os.path.join(out_dir, "work", f"merge-{run_id}.control")
    cmd = [binary, "-merge=1", f"-merge_control_file={control}", f"-rss_limit_mb={rss_limit_mb}",
           "-timeout=25", tmp, *inputs]
    log = os.path.join(out_dir, "logs", f"merge-{run_id}.log")
    # cwd: a crash during the merge writes its crash-<sha> file there, not in the tree.
    outcome = child_process.run(cmd, log_path=log, timeout=timeout, cwd=out_dir)
    if outcome.interrupted or outcome.timed_out or outcome.rc != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        status = ("interrupted" if outcome.interrupted else
                  "timed out" if outcome.timed_out else f"failed (exit {outcome.rc})")
        return {"added": 0, "merge_status": status, "merge_log": os.path.relpath(log, out_dir),
                **before}
    added = 0
    for name in sorted(os.listdir(tmp)):
        if name not in existing and os.path.isfile(os.path.join(tmp, name)):
            os.replace(os.path.join(tmp, name), os.path.join(corpus_dir, name))
            added += 1
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(work_corpus, ignore_errors=True)  # now either merged or redundant
    for leftover in (control,):
        if os.path.exists(leftover):
            os.unlink(leftover)
    return {"added": added, "merge_status": "merged", "merge_log": os.path.relpath(log, out_dir),
            **corpus_stats(corpus_dir)}
