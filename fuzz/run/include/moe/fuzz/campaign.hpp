// A generator-driven campaign (`moe-oracle fuzz`, no clang needed): cases from a seeded
// stream at the shapes asked for, every one judged; each violation shrunk and saved as a
// reproducer. It stops at the first violation, or with keepGoing runs to the time limit and
// counts the findings of each kind.
#pragma once

#include <csignal>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "moe/fuzz/call_cost.hpp"
#include "moe/fuzz/coverage_shares.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/fuzz/run_loop.hpp"
#include "moe/fuzz/shapes.hpp"
#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz {

struct CampaignOptions : RunOptions {
  VerdictConfig config;
  ShapeSpace shapes;
  // --family / fuzz(family=...): replaces the contract's "families" (what is drawn).
  std::optional<Families> families;
};

// One distinct fault: a kind, its tag (a crash's signal, an exception's type) and the
// degenerate shape class it was found on (degenerateShape), as its signature says.
struct FoundViolation {
  ViolationKind kind = ViolationKind::kNone;
  std::string tag;
  std::string shapeClass;  // "" on a real shape, else "empty-batch", "no-experts", "k-zero"
  std::string signature, reproducer, report;
  uint64_t count = 0;  // cases that showed this fault
  size_t logits = 0;   // size of the reported (smallest shrunk) case
  int32_t experts = 0, k = 0, tokens = 0;
  // The shape the fault was first drawn at, before shrinking (the same when it did not shrink).
  int32_t drawnExperts = 0, drawnK = 0, drawnTokens = 0;
  bool shrunk() const { return experts != drawnExperts || k != drawnK || tokens != drawnTokens; }
};

// Tokens judged per band of E, k and T (docs/fuzz.md "Coverage"), and what was abstained.
struct Coverage {
  std::map<std::string, uint64_t> experts, k, tokens, kVsExperts;
  // moe_route_v2: tokens per model recipe the case follows (recipeOf; "none" for others).
  std::map<std::string, uint64_t> recipes;
  std::map<std::string, uint64_t> abstainReasons;  // cases, by the router's reason
  CoverageShares shares;  // model shapes, degenerate, non-real, model-like vs adversarial
  // `judged` tokens of a case of this shape (fewer than `tokens` after a violation).
  void add(int32_t experts, int32_t k, int32_t tokens, int32_t judged);
};

// Calls past their budget from the router's own cost (CallCost): slow, not a finding.
struct SlowCalls {
  uint64_t calls = 0;
  double seconds = 0, budget = 0;  // the slowest such call, and its budget
  int32_t experts = 0, k = 0, tokens = 0;
};

struct CampaignSummary {
  std::string impl;
  uint64_t seed = 0;
  double seconds = 0;
  uint64_t cases = 0, tokens = 0, abstained = 0;
  uint64_t exact = 0, acceptable = 0, violation = 0;  // tokens
  uint64_t violationCases = 0;  // cases with a violation (a fault of the call judges no token)
  std::map<std::string, uint64_t> acceptableReasons;
  LevelCounters levels;
  Coverage coverage;
  std::vector<FoundViolation> violations;  // one per signature, in the order found
  uint64_t minTokens = 0;
  nlohmann::json verdictConfig;  // the configuration in force (verdictConfigJSON)
  SlowCalls slow;
  uint64_t skippedTooSlow = 0;  // cases not run: predicted to take longer than the time left
  double medianCallSeconds = 0;
  bool interrupted = false;
  double casesPerSecond() const { return seconds > 0 ? cases / seconds : 0; }
  // Fewer tokens judged than asked, or more than half the cases abstained.
  bool insufficientCoverage() const;
  // 0 clean, 1 a violation, 3 insufficient coverage (docs/fuzz.md "Exit codes").
  int exitCode() const;
};

// The router's contract with the run's overrides of what is drawn (--family).
Contract effectiveContract(const Router& router, const CampaignOptions& options);
CampaignSummary runCampaign(const Router& router, const CampaignOptions& options);
nlohmann::json summaryJSON(const CampaignSummary& s);
std::string summaryText(const CampaignSummary& s);

}  // namespace moe::fuzz
