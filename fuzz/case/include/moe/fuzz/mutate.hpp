// Structure-keeping mutations of a case (the libFuzzer custom mutator's core): change one
// logit to a special value, copy a logit (exact tie), move one by ±1 ulp (near-tie), make
// a row constant, flip a sign of zero, change E, k, T, threads or the split point.
#pragma once

#include "moe/fuzz/case.hpp"

namespace moe::fuzz {

// Applies 1..4 random mutations drawn from `src`; the result is always a valid case with
// at most `maxExperts` experts (the targets' MOE_FUZZ_MAX_EXPERTS, so that what the mutator
// writes decodes to the same case in the target).
void mutateCase(Case& c, ByteSource& src, int32_t maxExperts = kMaxExperts);

}  // namespace moe::fuzz
