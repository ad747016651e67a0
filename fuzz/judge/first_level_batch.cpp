// The first level for moe_route_v1 batched over the tokens of a case (first_level.hpp's
// decideTokensBatch): at a small row a token's work is a few comparisons and the exps and
// budgets of its gates, too little to fill a vector, so a block of tokens runs one vector
// lane per token (first_level_simd's prepareBatch, then gatesWithinBatch). A token is decided here
// only when decideToken would decide it `exact` by the same checks: a finite row, every slot filled
// with a distinct id and a finite gate >= 0, the kept set the spec's (n - 1 experts beat its worst
// member), the slots in rank order where the contract asks, and every gate within its
// budget. Anything else (a non-finite logit, an empty slot, k > E) is left to decideToken.
// Above kVectorExperts a row is wide enough to fill vectors itself: each token's checks are
// decideToken's own (decideBeforeGates, vector scans along the row), and only the gates run
// a lane per token (fillLanes).
#include <algorithm>
#include <array>
#include <vector>

#include "moe/fuzz/first_level.hpp"
#include "moe/fuzz/first_level_simd.hpp"

namespace moe::fuzz::first {

namespace {

// A block's lanes, slot-major: [slot * kBatchTokens + lane].
struct Lanes {
  std::vector<double> t, shift, p;
  std::vector<float> g;
  std::array<uint8_t, kBatchTokens> ok{};
};

// prepareBatch's job for rows above kVectorExperts, a token at a time: lane i holds token
// first + i where its row is finite and decideBeforeGates leaves it to the gates, else ok = 0
// and zeros.
void fillLanes(const Case& c, int32_t first, int32_t count, std::span<const int32_t> ids,
               std::span<const float> gates, const Contract& contract, Lanes& b) {
  const auto n = static_cast<size_t>(c.k);
  for (int32_t lane = 0; lane < count; ++lane) {
    const auto row = c.row(first + lane);
    const size_t slot0 = static_cast<size_t>(first + lane) * n;
    const auto tokenIds = ids.subspan(slot0, n);
    const auto tokenGates = gates.subspan(slot0, n);
    float m = 0;
    const bool left = allFinite(row) &&
                      !decideBeforeGates(row, c.k, tokenIds, tokenGates, contract, m).has_value();
    b.ok[static_cast<size_t>(lane)] = left ? 1 : 0;
    float mS = left ? row[static_cast<size_t>(tokenIds[0])] : 0.0f;
    for (size_t s = 0; left && s < n; ++s) mS = std::max(mS, row[static_cast<size_t>(tokenIds[s])]);
    for (size_t s = 0; s < n; ++s) {
      const size_t at = s * kBatchTokens + static_cast<size_t>(lane);
      const double xe = left ? static_cast<double>(row[static_cast<size_t>(tokenIds[s])]) : 0.0;
      b.t[at] = left ? static_cast<double>(mS) - xe : 0.0;
      b.shift[at] = left ? static_cast<double>(m) - xe : 0.0;
      b.g[at] = left ? tokenGates[s] : 0.0f;
    }
  }
}

}  // namespace

void decideTokensBatch(const Case& c, int32_t begin, int32_t end, std::span<const int32_t> ids,
                       std::span<const float> gates, const Contract& contract,
                       const VerdictConfig& config, std::span<uint8_t> decided) {
  std::fill(decided.begin(), decided.end(), uint8_t{0});
  const int32_t E = c.experts, n = c.k;
  if (E > kBatchExperts || n < 1 || n > E) return;
  const bool rank = contract.slotOrder == SlotOrder::kRank;
  thread_local Lanes b;
  const size_t slots = static_cast<size_t>(n) * kBatchTokens;
  b.t.resize(slots);
  b.shift.resize(slots);
  b.p.resize(slots);
  b.g.resize(slots);
  const GateBatch batch{n,
                        E,
                        b.t.data(),
                        b.shift.data(),
                        b.g.data(),
                        contract.expMaxUlp,
                        config.gateUlp.value_or(contract.gateBudget.ulp),
                        config.analyticFloor,
                        b.p.data(),
                        b.ok.data()};
  for (int32_t first = begin; first < end; first += kBatchTokens) {
    const int32_t count = std::min(kBatchTokens, end - first);
    const size_t slot0 = static_cast<size_t>(first) * static_cast<size_t>(n);
    if (E > kVectorExperts) {
      fillLanes(c, first, count, ids, gates, contract, b);
    } else {
      prepareBatch({c.row(first).data(), ids.data() + slot0, gates.data() + slot0, count, rank},
                   batch);
    }
    if (std::none_of(b.ok.begin(), b.ok.begin() + count, [](uint8_t v) { return v != 0; })) {
      continue;
    }
    gatesWithinBatch(batch);
    for (int32_t lane = 0; lane < count; ++lane) {
      decided[static_cast<size_t>(first - begin + lane)] = b.ok[static_cast<size_t>(lane)];
    }
  }
}

}  // namespace moe::fuzz::first
