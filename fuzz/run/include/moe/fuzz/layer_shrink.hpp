// Shrinking a layer violation (docs/fuzz.md "The layer door"): the kernel rerun on smaller
// cases, each judged by the layer verdict, so it lives with the run, not the judge.
#pragma once

#include <csignal>
#include <cstdint>

#include "moe/fuzz/layer_case.hpp"
#include "moe/fuzz/layer_kernel.hpp"
#include "moe/fuzz/layer_verdict.hpp"
#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz {

// The kernel called on the case (withRouting: ids and gates asked for) and its output
// judged, with the kernel's own reruns for the experiments (the shrinker's step, and
// replay's).
LayerCaseResult runAndJudgeLayer(const LayerKernel& kernel, const LayerCase& c, bool withRouting,
                                 Judge& routeJudge);

// Shrinks a violating case: greedy, each step one smaller case (the violating token alone,
// half the tokens, one token fewer, fewer slots k, fewer experts, half or one fewer hidden
// and intermediate units, no family), kept when the kernel still shows the same kind and
// tag; within `seconds`, or until `stop` (a signal handler's flag) is set. `c` and `result`
// become the smallest case and its result.
void shrinkLayer(const LayerKernel& kernel, LayerCase& c, bool withRouting, LayerCaseResult& result,
                 Judge& routeJudge, double seconds,
                 const volatile std::sig_atomic_t* stop = nullptr);

// The case cut to tokens [from, to), experts [0, n), hidden units [0, n), intermediate
// units [0, n) (the weights cut to match; the family's bias to the experts kept).
LayerCase layerTokens(const LayerCase& c, int32_t from, int32_t to);
LayerCase layerExperts(const LayerCase& c, int32_t n);
LayerCase layerHidden(const LayerCase& c, int32_t n);
LayerCase layerIntermediate(const LayerCase& c, int32_t n);

}  // namespace moe::fuzz
