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
#include "moe/fuzz/door_summary.hpp"
#include "moe/fuzz/run_loop.hpp"
#include "moe/fuzz/vectors.hpp"

namespace moe::fuzz {

struct DispatchCampaignOptions : RunOptions {
  DispatchDraw draw;
};

using DispatchFinding = DoorFinding<DispatchCase>;

// tokens (DoorSummary) and slots: of the cases judged inside the domain.
struct DispatchSummary : DoorSummary<DispatchFinding> {
  uint64_t slots = 0;
  uint64_t outsideDomain = 0;  // cases whose statuses were judged
  std::map<std::string, uint64_t> slotBands, blocks, capacity;
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
