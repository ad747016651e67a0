"""Part 1 of a campaign, dispatch kernels: `moe-oracle fuzz --impl LIB --abi moe_dispatch_v1
--json` on each moe_dispatch_v1 library: by default the in-tree one (libmoe_dispatch_eigen.so
beside the moe-oracle binary, in ../lib), else those --dispatchers names.

The run and its report entry are a router's (router_fuzz.fuzz_router: statuses, logs,
reproducers copied into the report's folder), keyed "dispatcher" and carrying the dispatch
summary's own fields: slots judged and their coverage by slot count, block and capacity.
"""

import os

import router_fuzz

ABI = "moe_dispatch_v1"
# The shipped dispatch kernels. Not every libmoe_dispatch_*.so of a build: the tests' broken
# kernels (libmoe_dispatch_test_*.so) sit in the same folder once the tests are built.
IN_TREE = ("libmoe_dispatch_eigen.so",)
# The dispatch door's --json fields kept in the report entry, beside the router's.
DISPATCH_FIELDS = ("slots", "passed", "violation_cases")


def in_tree_libraries(moe_oracle):
    """The IN_TREE libraries the build that holds MOE_ORACLE has (bin/ and lib/ are
    siblings); [] when there is none."""
    if not moe_oracle or os.sep not in moe_oracle:
        return []
    lib = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(moe_oracle)), "..",
                                        "lib"))
    return [os.path.join(lib, n) for n in IN_TREE if os.path.isfile(os.path.join(lib, n))]


def libraries(dispatchers, moe_oracle):
    """--dispatchers as a list ("none": no dispatch step), else the in-tree libraries."""
    if dispatchers is None:
        return in_tree_libraries(moe_oracle)
    if dispatchers in ("", "none"):
        return []
    return [os.path.abspath(p) for p in dispatchers.split(",")]


def missing_library(path):
    """Why PATH cannot be fuzzed (it is no file), or None."""
    return None if os.path.isfile(path) else f"{path}: no such library"


def fuzz_dispatcher(moe_oracle, library, seconds, seed, out_dir):
    """Runs one dispatch library's campaign; returns its report entry (a dict)."""
    entry = router_fuzz.fuzz_router(moe_oracle, f"{library}@{ABI}", seconds, seed, out_dir)
    entry["dispatcher"] = entry.pop("router")
    stdout = os.path.join(out_dir, "work", "routers",
                          router_fuzz.safe_name(library, ABI), "fuzz.json")
    result = router_fuzz.read_json_object(stdout) or {}
    for key in DISPATCH_FIELDS:
        if key in result:
            entry[key] = result[key]
    return entry
