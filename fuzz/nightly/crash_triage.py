"""Turns a libFuzzer artifact into a minimised input, a stable signature and a reproducer.

The signature is the one line moe-oracle's verdict code prints for a violation
("moe-oracle: <router>-<kind>"), found by running the target on the input. An
input that dies in a sanitizer instead gets "<target>-<sanitizer>-<error>-<function>";
a timeout or out-of-memory gets "<target>-timeout"/"<target>-oom". Equal signatures are
the same bug: the campaign keeps one (the smallest) input per signature.

The reproducer: the golden-vector JSON the target writes when MOE_REPRODUCER_DIR is set,
else the one `moe-oracle reproduce` (fuzz/cli/reproduce.cpp: moe-oracle's own decoder,
verdict and writer) makes for a violation with the same signature; either
replays with `moe-oracle replay`. Otherwise (a sanitizer crash) the raw input is the
reproducer and the command reruns the target on it.
"""

import glob
import os
import re
import shutil

import child_process

_MOE_SIGNATURE = re.compile(r"(moe-oracle: [A-Za-z0-9_.+-]+)")
_SAN_SUMMARY = re.compile(r"SUMMARY: (\w+Sanitizer): ([\w-]+)(?: (\S+))?(?: in (\S+))?")
_UBSAN_RUNTIME = re.compile(r"(\S+:\d+):\d+: runtime error: (.*)")


def bug_class(signature):
    """The signature without a shape ("-E<E>-k<k>", which signatures of older runs carry):
    one bug found at many shapes has many such signatures but one class, which bounds how
    much time triage spends on it."""
    return re.sub(r"-E\d+-k\d+$", "", signature)


def signature_from_output(target, kind, text):
    """The dedup key of one crash, from what the target printed when rerun on it."""
    m = _MOE_SIGNATURE.search(text)
    if m:
        return m.group(1)
    ub = _UBSAN_RUNTIME.search(text)
    if ub:
        where = os.path.basename(ub.group(1))
        return f"{target}-ubsan-{where}"
    san = _SAN_SUMMARY.search(text)
    if san:
        tool = san.group(1).replace("Sanitizer", "").lower()
        func = san.group(4) or os.path.basename(san.group(3) or "unknown")
        return f"{target}-{tool}-{san.group(2)}-{func}"
    if kind in ("timeout", "oom", "leak"):
        return f"{target}-{kind}"
    if "out-of-memory" in text:
        return f"{target}-oom"
    if "fuzz target exited" in text:  # exit() inside the target, e.g. a setup error
        return f"{target}-exited"
    if "deadly signal" in text:
        return f"{target}-deadly-signal"
    return f"{target}-{kind}-unclassified"


def artifact_kind(path):
    return os.path.basename(path).split("-", 1)[0]


def _rerun(binary, artifact, *, out_dir, rss_limit_mb, reproducer_dir=None):
    """Runs the target once on the input; returns what it printed."""
    env = dict(os.environ)
    if reproducer_dir:
        env["MOE_REPRODUCER_DIR"] = reproducer_dir
    log = os.path.join(out_dir, "logs", "rerun-" + os.path.basename(artifact) + ".log")
    # Run in the out folder: libFuzzer writes a crash-<sha> file into its working folder.
    child_process.run([binary, f"-rss_limit_mb={rss_limit_mb}", "-timeout=25", artifact],
                      log_path=log, timeout=120, env=env, cwd=out_dir)
    with open(log, encoding="utf-8", errors="replace") as f:
        return f.read(), log


def group_by_signature(binary, target, artifacts, *, out_dir, rss_limit_mb, limit=50):
    """{signature: [artifact, ...]}, smallest first; at most limit inputs are rerun
    (a night can leave thousands of copies of one bug)."""
    groups = {}
    for artifact in sorted(artifacts, key=os.path.getsize)[:limit]:
        if child_process.STOP.requested:
            break
        text, _ = _rerun(binary, artifact, out_dir=out_dir, rss_limit_mb=rss_limit_mb)
        sig = signature_from_output(target, artifact_kind(artifact), text)
        groups.setdefault(sig, []).append(artifact)
    return groups


def _convert_with_tool(reproduce, target, signature, keep, reproducers, *, out_dir):
    """Asks `moe-oracle reproduce` (the command `reproduce`: moe-oracle's decoder, verdict
    and writer) for a reproducer of this violation; True when it wrote one. fuzz_external's
    router is the library in MOE_IMPL; the other targets' are the built-in routers (the
    command's default)."""
    cmd = list(reproduce) + ["--out", reproducers, "--signature", signature]
    if target == "fuzz_external" and os.environ.get("MOE_IMPL"):
        cmd += ["--impl", os.environ["MOE_IMPL"]]
    cmd.append(keep)
    log = os.path.join(out_dir, "logs", "reproducer-" + os.path.basename(keep) + ".log")
    outcome = child_process.run(cmd, log_path=log, timeout=120, cwd=out_dir)
    return outcome.rc == 0 and bool(glob.glob(os.path.join(reproducers, "*.json")))


def triage(binary, target, build, signature, artifacts, *, out_dir, moe_oracle,
           minimize_runs, minimize_seconds, rss_limit_mb, reproduce=None, minimize=True,
           convert=True):
    """One crash entry for one signature: its smallest input minimised (when the
    minimised input still gives the same signature), its reproducer and command."""
    artifact = artifacts[0]
    kind = artifact_kind(artifact)
    folder = os.path.join(out_dir, "crashes", f"{build}-{target}")
    os.makedirs(folder, exist_ok=True)
    name = os.path.basename(artifact)
    keep = os.path.join(folder, name)
    shutil.copyfile(artifact, keep)
    if minimize and kind in ("crash", "leak"):
        minimised = keep + ".min"
        cmd = [binary, "-minimize_crash=1", f"-runs={minimize_runs}",
               f"-max_total_time={minimize_seconds}", f"-rss_limit_mb={rss_limit_mb}",
               f"-exact_artifact_path={minimised}", artifact]
        child_process.run(cmd, log_path=os.path.join(out_dir, "logs", f"minimize-{name}.log"),
                          timeout=minimize_seconds + 60, cwd=out_dir)
        if os.path.isfile(minimised):
            text, _ = _rerun(binary, minimised, out_dir=out_dir, rss_limit_mb=rss_limit_mb)
            if signature_from_output(target, kind, text) == signature:
                keep = minimised
    reproducers = keep + ".reproducer"
    shutil.rmtree(reproducers, ignore_errors=True)
    os.makedirs(reproducers)
    log = os.path.join(out_dir, "logs", "rerun-" + os.path.basename(artifact) + ".log")
    if convert:
        _, log = _rerun(binary, keep, out_dir=out_dir, rss_limit_mb=rss_limit_mb,
                        reproducer_dir=reproducers)
    entry = {"source": "libfuzzer", "target": target, "build": build, "kind": kind,
             "signature": signature, "bug_class": bug_class(signature),
             "count": len(artifacts), "minimised": keep.endswith(".min"),
             "input": os.path.relpath(keep, out_dir), "input_bytes": os.path.getsize(keep),
             "log": os.path.relpath(log, out_dir)}
    jsons = sorted(glob.glob(os.path.join(reproducers, "*.json")))
    if convert and not jsons and reproduce and signature.startswith("moe-oracle: "):
        _convert_with_tool(reproduce, target, signature, keep, reproducers, out_dir=out_dir)
        jsons = sorted(glob.glob(os.path.join(reproducers, "*.json")))
    if jsons:
        entry["reproducer"] = os.path.relpath(jsons[0], out_dir)
        entry["command"] = f"{moe_oracle} replay {os.path.abspath(jsons[0])}"
    else:
        shutil.rmtree(reproducers, ignore_errors=True)
        entry["reproducer"] = entry["input"]
        entry["command"] = f"{binary} {os.path.abspath(keep)}"
    return entry
