#include "moe/fuzz/decision_coverage.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>

namespace moe::fuzz {

namespace {

// libFuzzer reads every byte of this section as a coverage counter after each exec and
// clears it (in 8-byte words) before the next: sized and aligned to whole words.
constexpr size_t kCounterBytes = (kCoveredRouters * kVerdictSignalCount + 7) / 8 * 8;
__attribute__((section("__libfuzzer_extra_counters"), used, aligned(64)))
uint8_t signalCounters[kCounterBytes];

constexpr size_t kShapeBytes = (kShapeExpertBuckets * kShapeKClasses + 7) / 8 * 8;
__attribute__((section("__libfuzzer_extra_counters"), used, aligned(64)))
uint8_t shapeCounters[kShapeBytes];

constexpr std::array<const char*, kVerdictSignalCount> kSignalNames = {"selection_float",
                                                                       "selection_double",
                                                                       "selection_certified",
                                                                       "selection_undecided",
                                                                       "gate_double",
                                                                       "gate_certified",
                                                                       "gate_undecided",
                                                                       "exact",
                                                                       "near-tie-probabilities",
                                                                       "near-tie-order",
                                                                       "nonreal-row",
                                                                       "abstained",
                                                                       "margin>1/8",
                                                                       "margin>1/2",
                                                                       "margin>7/8",
                                                                       "near-tie-keys",
                                                                       "near-tie-groups",
                                                                       "tiny-scores",
                                                                       "first_level"};

struct Tally {
  std::array<uint64_t, kVerdictSignalCount> execs{};
  uint64_t total = 0, tokens = 0;
  ~Tally() {
    if (total == 0) return;
    std::fprintf(stderr, "moe-oracle signals over %llu execs, %llu tokens judged:",
                 (unsigned long long)total, (unsigned long long)tokens);
    for (size_t s = 0; s < kVerdictSignalCount; ++s) {
      std::fprintf(stderr, " %s=%llu", kSignalNames[s], (unsigned long long)execs[s]);
    }
    std::fprintf(stderr, "\n");
  }
};

// Only with MOE_FUZZ_SIGNALS set: a static, so its destructor prints at exit.
Tally* tally() {
  static Tally* const t = []() -> Tally* {
    if (!std::getenv("MOE_FUZZ_SIGNALS")) return nullptr;
    static Tally instance;
    return &instance;
  }();
  return t;
}

constexpr uint32_t bit(VerdictSignal s) {
  return uint32_t{1} << static_cast<unsigned>(s);
}

}  // namespace

uint32_t verdictSignals(const LevelCounters& before, const LevelCounters& after,
                        const CaseResult& result) {
  uint32_t s = 0;
  auto rose = [&](uint64_t LevelCounters::*level, VerdictSignal signal) {
    if (after.*level > before.*level) s |= bit(signal);
  };
  rose(&LevelCounters::firstLevel, VerdictSignal::kFirstLevel);
  rose(&LevelCounters::selectionFloat, VerdictSignal::kSelectionFloat);
  rose(&LevelCounters::selectionDouble, VerdictSignal::kSelectionDouble);
  rose(&LevelCounters::selectionCertified, VerdictSignal::kSelectionCertified);
  rose(&LevelCounters::selectionUndecided, VerdictSignal::kSelectionUndecided);
  rose(&LevelCounters::gateDouble, VerdictSignal::kGateDouble);
  rose(&LevelCounters::gateCertified, VerdictSignal::kGateCertified);
  rose(&LevelCounters::gateUndecided, VerdictSignal::kGateUndecided);
  if (result.abstained) s |= bit(VerdictSignal::kAbstained);
  if (result.tokens.plainExact() > 0) s |= bit(VerdictSignal::kExactToken);
  if (result.tokens.plainNonrealRows() > 0) s |= bit(VerdictSignal::kNonrealRow);
  for (const Verdict& v : result.tokens.whole()) {
    if (v.outcome == Outcome::kExact) s |= bit(VerdictSignal::kExactToken);
    if (v.outcome != Outcome::kAcceptable) continue;
    if (v.reason == "near-tie-probabilities") s |= bit(VerdictSignal::kNearTieProbabilities);
    if (v.reason == "near-tie-order") s |= bit(VerdictSignal::kNearTieOrder);
    if (v.reason == "nonreal-row") s |= bit(VerdictSignal::kNonrealRow);
    if (v.reason == "near-tie-keys") s |= bit(VerdictSignal::kNearTieKeys);
    if (v.reason == "near-tie-groups") s |= bit(VerdictSignal::kNearTieGroups);
    if (v.reason == "tiny-scores") s |= bit(VerdictSignal::kTinyScores);
    if (v.margin > 0.125) s |= bit(VerdictSignal::kMarginAboveEighth);
    if (v.margin > 0.5) s |= bit(VerdictSignal::kMarginAboveHalf);
    if (v.margin > 0.875) s |= bit(VerdictSignal::kMarginAboveSevenEighths);
  }
  return s;
}

void markVerdictSignals(size_t router, uint32_t signals, size_t tokensJudged) {
  uint8_t* row = signalCounters + (router % kCoveredRouters) * kVerdictSignalCount;
  Tally* t = tally();
  if (t) {
    ++t->total;
    t->tokens += tokensJudged;
  }
  for (size_t s = 0; s < kVerdictSignalCount; ++s) {
    if (!(signals >> s & 1)) continue;
    row[s] = 1;
    if (t) ++t->execs[s];
  }
}

std::span<const uint8_t> verdictSignalCounters() {
  return {signalCounters, kCoveredRouters * kVerdictSignalCount};
}

size_t caseShapeIndex(int32_t experts, int32_t k) {
  const size_t e =
      experts <= 64 ? static_cast<size_t>(experts - 1) : 64 + static_cast<size_t>(experts % 16);
  const size_t kClass = k == 0 ? 0 : k < experts ? 1 : k == experts ? 2 : 3;
  return e * kShapeKClasses + kClass;
}

void markCaseShape(int32_t experts, int32_t k) {
  shapeCounters[caseShapeIndex(experts, k)] = 1;
}

std::span<const uint8_t> caseShapeCounters() {
  return {shapeCounters, kShapeExpertBuckets * kShapeKClasses};
}

}  // namespace moe::fuzz
