// Shrinking a dispatch violation (docs/fuzz.md "The dispatch door"): the dispatcher rerun on
// smaller cases, each judged by the dispatch verdict, so it lives with the run, not the judge.
#pragma once

#include <csignal>

#include "moe/fuzz/dispatch_case.hpp"
#include "moe/fuzz/dispatch_verdict.hpp"
#include "moe/fuzz/dispatcher.hpp"

namespace moe::fuzz {

// Runs the dispatcher on the case and judges it (the shrinker's step, and replay's).
DispatchVerdict runAndJudgeDispatch(const Dispatcher& d, const DispatchCase& c,
                                    DispatchOutput* out = nullptr);

// Shrinks a violating case while the violation keeps its kind and tag: fewer tokens, a
// smaller k, fewer experts, block 1, no capacity, empty slots, a plain max_rows; `seconds`
// caps it, and `stop` (a signal handler's flag) ends it when set. `c`, `out` and `v` become
// the smallest case found, its output and verdict.
void shrinkDispatch(const Dispatcher& d, DispatchCase& c, DispatchOutput& out, DispatchVerdict& v,
                    double seconds, const volatile std::sig_atomic_t* stop = nullptr);

}  // namespace moe::fuzz
