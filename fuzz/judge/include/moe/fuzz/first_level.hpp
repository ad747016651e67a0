// The first level of the verdict (docs/fuzz.md, "The first level"): a pass over one token
// that decides it for certain when its margins exceed the bounds, and otherwise says
// nothing. What it decides is exactly what the ladder behind it (judgeToken,
// judgeFamilyToken: float, binary64 filter, MPFR) decides: `exact`, or `acceptable` with the
// reason "nonreal-row". Every other token (a near tie, a gate near its budget, any
// violation) goes on to the ladder, which also writes the certificates.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/contract.hpp"
#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz::first {

// A binary64 value's rigorous error bound is compared with a budget only after this factor
// shrinks the budget, so that two levels that each bound the same real number from
// estimates that differ in their last bits cannot disagree.
inline constexpr double kSafety = 1 - 0x1p-30;

// What the first level decided about a token: nothing (the ladder judges it), or the
// ladder's verdict, which then has nothing more to say than its outcome (no certificate,
// margin 0): `exact`, or `acceptable` with the reason "nonreal-row".
enum class Decided { kNo, kExact, kNonrealRow };

// moe_route_v1 (judgeToken's verdict).
Decided decideToken(std::span<const float> x, int32_t k, std::span<const int32_t> ids,
                    std::span<const float> gates, const Contract& contract,
                    const VerdictConfig& config);

// moe_route_v2 on a valid family (judgeFamilyToken's verdict).
Decided decideFamilyToken(std::span<const float> x, const Family& f, int32_t k,
                          std::span<const int32_t> ids, std::span<const float> gates,
                          const Contract& contract, const VerdictConfig& config);

// The family's scores of a row in binary64 (sigmoid, or softmax over the row) with their
// rigorous error bounds: |s[i] - exact score i| <= serr[i] (docs/fuzz.md derives them).
void familyScores(std::span<const float> x, const Family& f, std::vector<double>& s,
                  std::vector<double>& serr);

}  // namespace moe::fuzz::first
