"""Builds report.json's content from the campaign state: totals, tables, deduped bugs.

Fields (docs/nightly.md explains each for readers):
  schema, campaign_id, started, finished, complete, interrupted, budget_s, seed, host,
  totals {router_cases, router_tokens, verdicts (per token) {exact, acceptable, violation},
          dispatch_cases, dispatch_slots,
          libfuzzer_execs, failed_steps, bug_classes {signature less -E<E>-k<k>: count},
          violations, new_violations, corpus_added},
  corpus {merged_into_repo, folder},
  routers [...], dispatchers [...], targets [...], violations [...],
  pending [step ids not yet run]
"""

import os
import re

SCHEMA = "moe_campaign_report_v1"
VERDICT_KINDS = ("exact", "acceptable", "violation")


def host_info():
    flags = set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    flags.update(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    wanted = ("avx2", "fma", "avx512f", "avx512bw", "avx512dq", "avx512vl")
    return {"cpus": os.cpu_count() or 1, "cpu_flags": [f for f in wanted if f in flags]}


def _dedup_violations(state):
    """One row per signature; count = how many inputs hit it; smallest input kept."""
    rows = {}
    for step_id in state["plan"]:
        step = state["steps"].get(step_id)
        if not step:
            continue
        found = (step.get("violations", []) if step_id.startswith(("router:", "dispatch:"))
                 else step.get("crashes", []))
        for v in found:
            sig = v.get("signature") or "unsigned"
            row = rows.get(sig)
            if row is None:
                row = dict(v, count=0, found_by=[])
                if "source" not in row:
                    row["source"] = "moe-oracle fuzz"
                rows[sig] = row
            row["count"] += v.get("count", 1)
            row["found_by"].append(step_id)
            if v.get("input_bytes", 1 << 62) < row.get("input_bytes", 1 << 62):
                for key in ("input", "input_bytes", "reproducer", "command"):
                    if key in v:
                        row[key] = v[key]
    for sig, row in rows.items():
        first = state["known_signatures"].get(sig)
        row["first_seen"] = first
        row["new"] = first == state["campaign_id"]
    return sorted(rows.values(), key=lambda r: (not r["new"], r["signature"]))


def build(state, *, interrupted):
    routers = [state["steps"][s] for s in state["plan"] if s.startswith("router:") and
               s in state["steps"]]
    dispatchers = [state["steps"][s] for s in state["plan"] if s.startswith("dispatch:") and
                   s in state["steps"]]
    targets = []
    for s in state["plan"]:
        if s.startswith("libfuzzer:") and s in state["steps"]:
            t = {k: v for k, v in state["steps"][s].items()
                 if k not in ("artifacts", "work_corpus")}
            targets.append(t)
    verdicts = {k: sum(r.get("verdicts", {}).get(k, 0) for r in routers) for k in VERDICT_KINDS}
    violations = _dedup_violations(state)
    classes = {}
    for v in violations:
        cls = re.sub(r"-E\d+-k\d+$", "", v["signature"])
        classes[cls] = classes.get(cls, 0) + 1
    return {
        "schema": SCHEMA,
        "campaign_id": state["campaign_id"],
        "started": state["started"],
        "finished": state.get("finished"),
        "complete": bool(state.get("complete")),
        "interrupted": interrupted,
        "resumed": state.get("resumed", 0),
        "budget_s": state["budget_s"],
        "seed": state["seed"],
        "host": host_info(),
        "totals": {
            "router_cases": sum(r.get("cases", 0) for r in routers),
            "router_tokens": sum(r.get("tokens", 0) for r in routers),
            "verdicts": verdicts,
            "dispatch_cases": sum(d.get("cases", 0) for d in dispatchers),
            "dispatch_slots": sum(d.get("slots", 0) for d in dispatchers),
            "libfuzzer_execs": sum(t.get("execs", 0) for t in targets),
            "violations": len(violations),
            "bug_classes": classes,
            "new_violations": sum(1 for v in violations if v["new"]),
            "corpus_added": sum(t.get("added", 0) for t in targets),
            # Steps that could not do their job: a library that does not load, a hang.
            "failed_steps": sum(1 for x in routers + dispatchers + targets
                                if x.get("status") in ("error", "hung")),
        },
        # Where new inputs went: the campaign's own corpus unless --merge-corpus.
        "corpus": {"merged_into_repo": bool(state.get("merge_corpus")),
                   "folder": "corpus/" if state.get("merge_corpus") else "<out>/corpus/"},
        "routers": routers,
        "dispatchers": dispatchers,
        "targets": targets,
        "violations": violations,
        "pending": [s for s in state["plan"] if s not in state["steps"]],
    }
