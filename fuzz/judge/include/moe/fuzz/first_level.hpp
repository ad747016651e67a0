// The first level of the verdict (docs/fuzz.md, "The first level"): a pass over one token
// that decides it for certain when its margins exceed the bounds, and otherwise says
// nothing. What it decides is exactly what the ladder behind it (judgeToken,
// judgeFamilyToken: float, binary64 filter, MPFR) decides: `exact`, or `acceptable` with the
// reason "nonreal-row". Every other token (a near tie, a gate near its budget, any
// violation) goes on to the ladder, which also writes the certificates.
#pragma once

#include <cstdint>
#include <optional>
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
// ladder's verdict, which then has nothing more to say than its outcome and reason (no
// certificate, margin 0): `exact`, or `acceptable` with the reason "nonreal-row", or (at
// moe_route_v2) `acceptable` with the reason "near-tie-keys" or "near-tie-order".
enum class Decided { kNo, kExact, kNonrealRow, kNearTieKeys, kNearTieOrder };

// moe_route_v1 (judgeToken's verdict).
Decided decideToken(std::span<const float> x, int32_t k, std::span<const int32_t> ids,
                    std::span<const float> gates, const Contract& contract,
                    const VerdictConfig& config);

// decideToken's checks before the gates: its verdict where they decide the token, else
// nullopt (a real row, ids' first min(k, E) slots the spec's kept set in the contract's
// order: only the gates are left). rowMax: the row's largest logit.
std::optional<Decided> decideBeforeGates(std::span<const float> x, int32_t k,
                                         std::span<const int32_t> ids, std::span<const float> gates,
                                         const Contract& contract, float& rowMax);

// moe_route_v2 on a valid family (judgeFamilyToken's verdict).
Decided decideFamilyToken(std::span<const float> x, const Family& f, int32_t k,
                          std::span<const int32_t> ids, std::span<const float> gates,
                          const Contract& contract, const VerdictConfig& config);

// moe_route_v1 at a small row (E <= kBatchExperts, 1 <= k <= E): tokens [begin, end) of the
// case at once, the gates' exps and budgets one vector lane per token (first_level_batch.cpp;
// up to kVectorExperts the checks before the gates too, above them token by token).
// decided[t - begin] is 1 for each token it finds `exact` as decideToken does (the same
// checks and bounds), else 0: decideToken and the ladder judge those as before.
inline constexpr int32_t kBatchExperts = 64;
void decideTokensBatch(const Case& c, int32_t begin, int32_t end, std::span<const int32_t> ids,
                       std::span<const float> gates, const Contract& contract,
                       const VerdictConfig& config, std::span<uint8_t> decided);

// The family's scores of a row in binary64 (sigmoid, or softmax over the row) with their
// rigorous error bounds: |s[i] - exact score i| <= serr[i] (docs/fuzz.md derives them).
void familyScores(std::span<const float> x, const Family& f, std::vector<double>& s,
                  std::vector<double>& serr);

}  // namespace moe::fuzz::first
