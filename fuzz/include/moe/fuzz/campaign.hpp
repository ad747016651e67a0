// A generator-driven campaign (`moe-oracle fuzz`, no clang needed): cases from a seeded
// stream, every one judged; stops at the first violation and writes its reproducer.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "moe/fuzz/router.hpp"
#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz {

struct CampaignOptions {
  double seconds = 10;
  uint64_t seed = 1;
  uint64_t maxCases = 0;  // 0 = only the time limit
  std::string outDir = "moe-oracle-out";
  VerdictConfig config;
  bool progress = true;  // a progress line on stderr about once a second
};

struct FoundViolation {
  std::string signature, kind, reproducer, report;
};

struct CampaignSummary {
  std::string impl;
  uint64_t seed = 0;
  double seconds = 0;
  uint64_t cases = 0, tokens = 0, abstained = 0;
  uint64_t exact = 0, acceptable = 0, violation = 0;  // per token
  std::map<std::string, uint64_t> acceptableReasons;
  LevelCounters levels;
  std::vector<FoundViolation> violations;
  double casesPerSecond() const { return seconds > 0 ? cases / seconds : 0; }
};

CampaignSummary runCampaign(const Router& router, const CampaignOptions& options);
nlohmann::json summaryJSON(const CampaignSummary& s);
std::string summaryText(const CampaignSummary& s);

}  // namespace moe::fuzz
