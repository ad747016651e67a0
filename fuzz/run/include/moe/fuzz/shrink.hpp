// Shrinking a violation to the smallest case that still shows it: a tie bug
// found at E = 605, k = 460 is reported at E = 2, k = 1, with logits like 0 and 1.
#pragma once

#include <csignal>
#include <optional>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/contract.hpp"
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
// Every step stays inside `space` and `families` (caseInside: the shapes and recipe the
// run was asked for; a kernel of E = 60, k = 4 is never reported at E = 17), keeps the
// degenerate shape class (an empty batch neither entered nor left), and keeps a tie's
// evidence: when the violating token's tied experts (equal logits and bias) were both kept
// with different gates, so are they in the shrunk case. The bias is simplified as the
// logits are.
struct ShrinkLimits {
  ShapeSpace space;
  std::optional<Families> families;
};
// `stop`, when set (a signal handler's flag), ends the shrink as its time running out does.
ShrinkStats shrinkViolation(Judge& judge, const Router& router, Case& c, CaseResult& r,
                            double seconds, const ShrinkLimits& limits = {},
                            const volatile std::sig_atomic_t* stop = nullptr);

}  // namespace moe::fuzz
