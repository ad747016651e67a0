// The dispatch door's campaign, reproducers, replay and explain (docs/fuzz.md "The dispatch
// door"): cases drawn from a seeded stream, each judged exactly; a violation shrunk and
// written as a Wycheproof-style file (group DispatchReproducer) that `moe-oracle replay`
// judges again and `moe-oracle explain` tells.
#pragma once

#include <csignal>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "moe/fuzz/dispatch_verdict.hpp"
#include "moe/fuzz/dispatcher.hpp"
#include "moe/fuzz/run_loop.hpp"
#include "moe/fuzz/vectors.hpp"

namespace moe::fuzz {

struct DispatchCampaignOptions : RunOptions {
  DispatchDraw draw;
};

// One distinct fault (kind and tag), its count and its smallest shrunk reproducer.
struct DispatchFinding {
  ViolationKind kind = ViolationKind::kNone;
  std::string tag, signature, reproducer, report;
  uint64_t count = 0;
  DispatchCase smallest, drawn;
};

struct DispatchSummary {
  std::string impl;
  uint64_t seed = 0;
  double seconds = 0;
  uint64_t cases = 0, passed = 0, abstained = 0, violationCases = 0;
  uint64_t tokens = 0, slots = 0;  // of the cases judged inside the domain
  uint64_t outsideDomain = 0;      // cases whose statuses were judged
  std::map<std::string, uint64_t> slotBands, blocks, capacity, abstainReasons;
  std::vector<DispatchFinding> findings;
  uint64_t minTokens = 0;
  bool interrupted = false;
  nlohmann::json contract;
  bool insufficientCoverage() const { return tokens < minTokens || abstained * 2 > cases; }
  int exitCode() const { return !findings.empty() ? 1 : insufficientCoverage() ? 3 : 0; }
};

DispatchSummary runDispatchCampaign(const Dispatcher& d, const DispatchCampaignOptions& options);
nlohmann::json dispatchSummaryJSON(const DispatchSummary& s);
std::string dispatchSummaryText(const DispatchSummary& s);

// A reproducer file: one DispatchReproducer test with the case, the output, the verdict.
nlohmann::json dispatchReproducerFile(const Dispatcher& d, const DispatchCase& c,
                                      const DispatchOutput& out, const DispatchVerdict& v,
                                      const nlohmann::json& provenance);
// A report for a person: the case, the kernel's list against the spec's, the signature.
std::string dispatchReport(const std::string& name, const DispatchCase& c,
                           const DispatchOutput& out, const DispatchVerdict& v);

// isDispatchVectorFile (vectors.hpp) sends a file here.
// Each DispatchReproducer: the recorded output judged again must still be the recorded
// violation; with `impl`, the kernel rerun on the case must not violate.
ReplaySummary replayDispatchVectors(const nlohmann::json& file, const Dispatcher* impl);
// Each test told for a person (rerun through `impl` when given).
std::string explainDispatchVectors(const nlohmann::json& file, const Dispatcher* impl,
                                   int* unexplained = nullptr);

}  // namespace moe::fuzz
