"""Part 1 of a campaign: `moe-oracle fuzz --json` on each built-in router, through
moe_route_v1 and, once per distinct kernel, through moe_route_v2 ("NAME@moe_route_v2").

A router this CPU lacks makes moe-oracle exit 2 with a message, or abstain on every case
(exit 3); either is recorded as "unavailable" (with the reason), not as a failure of the
campaign. Exit 3 with some cases judged is "insufficient-coverage".
"""

import json
import os
import re
import shutil

import subprocess

import child_process


ABI_V1, ABI_V2 = "moe_route_v1", "moe_route_v2"
ABI_DISPATCH = "moe_dispatch_v1"  # dispatch_fuzz.py's steps go through fuzz_router too


def builtin_routers(moe_oracle, abi=None):
    """The built-in routers this moe-oracle has, from `moe-oracle list` (the router list
    exists once, in impl/); with abi="moe_route_v2", one router per distinct v2 kernel
    (`list --abi`). [] when the binary cannot be run or does not know the flag."""
    cmd = [moe_oracle, "list"] + (["--abi", abi] if abi else [])
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except OSError:
        return []
    if r.returncode != 0:
        return []
    return [line.strip() for line in r.stdout.splitlines() if line.strip()]


def split_router(router):
    """"NAME@moe_route_v2" -> ("NAME", "moe_route_v2") (and @moe_route_v1); a plain name or
    path -> (it, None): the ABI moe-oracle picks by default (v1 for a built-in router, v2 for
    a library that exports it)."""
    name, sep, abi = router.rpartition("@")
    return (name, abi) if sep and abi in (ABI_V1, ABI_V2, ABI_DISPATCH) else (router, None)


def unknown_router(router, known):
    """Why ROUTER (as --routers gives it) cannot be fuzzed, or None: a name that is not in
    KNOWN, the built-in routers of this moe-oracle (a typo would otherwise read as a router
    this CPU lacks), or a library path that is no file."""
    impl, _ = split_router(router)
    if "/" in impl or impl.endswith(".so"):
        return None if os.path.isfile(impl) else f"{impl}: no such library"
    if known and impl not in known:
        return (f"{router}: no built-in router {impl!r} (moe-oracle list: "
                f"{', '.join(known)}; NAME@{ABI_V2} for its moe_route_v2)")
    return None


def safe_name(impl, abi):
    """The name of IMPL's files in the out folder: its file name (a user's library is given
    by path) and the ABI, made safe."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(impl) + (f"@{abi}" if abi else ""))


def fuzz_router(moe_oracle, router, seconds, seed, out_dir, jobs=None):
    """Runs one router's campaign (ROUTER as split_router reads it); returns its report
    entry (a dict). jobs: the threads that judge (--jobs; the routers run one at a time, so
    the campaign gives each all its cores)."""
    impl, abi = split_router(router)
    safe = safe_name(impl, abi)
    work = os.path.join(out_dir, "work", "routers", safe)
    os.makedirs(work, exist_ok=True)
    log = os.path.join(out_dir, "logs", f"router-{safe}.log")
    stdout = os.path.join(work, "fuzz.json")
    cmd = [moe_oracle, "fuzz", "--impl", impl, "--seconds", str(seconds), "--seed",
           str(seed), "--out", os.path.join(work, "reproducers"), "--json"]
    if abi:
        cmd += ["--abi", abi]
    if jobs:
        cmd += ["--jobs", str(jobs)]
    outcome = child_process.run(cmd, log_path=log, timeout=seconds * 2 + 60,
                                stdout_path=stdout)
    entry = {"router": router, "command": " ".join(cmd), "log": os.path.relpath(log, out_dir),
             "exit_code": outcome.rc, "budget_s": seconds, "wall_s": round(outcome.wall, 2)}
    if outcome.interrupted:
        entry["status"] = "interrupted"
        return entry
    if outcome.timed_out:
        entry["status"] = "hung"
        return entry
    result = read_json_object(stdout)
    if outcome.rc == 2 or result is None:
        # Exit 2 on a built-in name means this CPU lacks it; on a library path, that the
        # library cannot be loaded, which is the user's error to see.
        is_path = "/" in impl or impl.endswith(".so")
        entry["status"] = "unavailable" if outcome.rc == 2 and not is_path else "error"
        entry["message"] = _last_line(log)
        return entry
    entry["status"] = "violation" if outcome.rc == 1 else "clean"
    if outcome.rc == 3:  # insufficient coverage: too few tokens judged, or mostly abstained
        if result.get("cases", 0) > 0 and result.get("abstained") == result["cases"]:
            entry["status"] = "unavailable"  # it abstained on every case: e.g. no such ISA
            entry["message"] = "abstained on every case"
        else:
            entry["status"] = "insufficient-coverage"
            entry["message"] = (f"{result.get('tokens', 0)} tokens judged, "
                                f"{result.get('abstained', 0)} of {result.get('cases', 0)} "
                                "cases abstained")
    for key in ("seed", "cases", "tokens", "abstained", "cases_per_s", "verdicts",
                "acceptable_reasons", "levels", "coverage"):
        if key in result:
            entry[key] = result[key]
    entry["violations"] = [_keep_reproducer(v, out_dir) for v in result.get("violations", [])]
    return entry


def _keep_reproducer(violation, out_dir):
    """Copies the reproducer into the report's folder so the page can link to it."""
    v = {"signature": violation.get("signature", ""), "kind": violation.get("kind", ""),
         "count": violation.get("count", 1)}
    src = violation.get("reproducer")
    if src and os.path.isfile(src):
        dest_dir = os.path.join(out_dir, "reproducers")
        os.makedirs(dest_dir, exist_ok=True)
        dest = os.path.join(dest_dir, os.path.basename(src))
        if os.path.abspath(src) != os.path.abspath(dest):
            shutil.copyfile(src, dest + ".tmp")
            os.replace(dest + ".tmp", dest)
        v["reproducer"] = os.path.relpath(dest, out_dir)
    return v


def read_json_object(path):
    """moe-oracle prints exactly one JSON object on stdout; None if it did not."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read().strip()
        value = json.loads(text) if text else None
        return value if isinstance(value, dict) else None
    except (OSError, ValueError):
        return None


def _last_line(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [ln.strip() for ln in f if ln.strip() and not ln.startswith("$ ")]
        return lines[-1] if lines else ""
    except OSError:
        return ""
