"""The campaign's state file (<out>/state.json): what is done, so a stopped run resumes.

A campaign is a plan of steps (one per router, one per libFuzzer target and build).
Each finished step's result is stored atomically the moment it finishes. A run that
finds an unfinished campaign in its out folder skips the finished steps and reruns the
rest (a stopped libFuzzer step restarts from its work corpus, which keeps what it had
found). A run that finds a finished campaign starts a new one but keeps the signatures
of every crash ever seen, so the report can tell new bugs from known ones.
"""

import os
import time

import atomic_io

VERSION = 1


def state_path(out_dir):
    return os.path.join(out_dir, "state.json")


def _now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def load_or_start(out_dir, *, budget_s, seed, plan):
    """Returns (state, resumed): the unfinished campaign in out_dir, or a fresh one."""
    old = atomic_io.read_json(state_path(out_dir))
    if not isinstance(old, dict) or old.get("version") != VERSION:
        old = None
    if old and not old.get("complete") and old.get("plan") == plan:
        old["resumed"] = old.get("resumed", 0) + 1
        return old, True
    number = (old or {}).get("number", 0) + 1
    state = {
        "version": VERSION,
        # The count makes ids unique even for two campaigns started in one second.
        "campaign_id": time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{number}",
        "number": number,
        "started": _now(),
        "complete": False,
        "budget_s": budget_s,
        "seed": seed,
        "plan": plan,
        "steps": {},
        "resumed": 0,
        "known_signatures": (old or {}).get("known_signatures", {}),
        "history": (old or {}).get("history", [])[-30:],
    }
    return state, False


def save(out_dir, state):
    atomic_io.write_json(state_path(out_dir), state)


def finish_step(out_dir, state, step_id, entry):
    state["steps"][step_id] = entry
    save(out_dir, state)


def remember_signature(state, signature):
    """Returns True when the signature was never seen before this campaign."""
    known = state["known_signatures"]
    if signature in known:
        return known[signature] == state["campaign_id"]
    known[signature] = state["campaign_id"]
    return True


def complete(out_dir, state, summary):
    state["complete"] = True
    state["finished"] = _now()
    state["history"].append({"campaign_id": state["campaign_id"], "finished": state["finished"],
                             **summary})
    save(out_dir, state)
