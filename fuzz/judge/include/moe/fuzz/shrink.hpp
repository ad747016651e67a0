// Shrinking a violation to the smallest case that still shows it (issue 12): a tie bug
// found at E = 605, k = 460 is reported at E = 2, k = 1, with logits like 0 and 1.
#pragma once

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz {

struct ShrinkStats {
  int runs = 0;           // router runs spent
  bool timedOut = false;  // the time cap ended it before a fixed point
};

// Makes `c` smaller while `router` still violates with the same kind, and leaves in `r` the
// judgement of the final case. In order, repeated until nothing changes or `seconds` pass:
//   1. the batch: the violating token alone (for a token's kind), then chunks of tokens;
//   2. the experts: chunks of columns removed, k lowered by the spec's kept experts among
//      them (so the kept boundary stays where it was), else k kept;
//   3. k lowered;
//   4. the logits: each distinct value, everywhere it occurs (ties stay ties), replaced by
//      a simpler one: 0, ±1, ±2, its integer part, itself with fewer significant bits.
// A bug that needs its shape (E = 1, k >= E, a large T) keeps what it needs: every step is
// taken only when the same kind reproduces.
ShrinkStats shrinkViolation(Judge& judge, const Router& router, Case& c, CaseResult& r,
                            double seconds);

}  // namespace moe::fuzz
