// What a fuzz run of any door hands back: the reports, the summary (text and JSON), the
// findings' reproducer and signature lines and the exit code; and the one way the command
// prints it.
#pragma once

#include <csignal>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "moe/fuzz/campaign.hpp"
#include "moe/fuzz/dispatch_campaign.hpp"
#include "moe/fuzz/layer_campaign.hpp"

namespace moe::fuzz {

struct RunOutcome {
  std::vector<std::string> reports;  // one full report per finding
  std::string text;                  // the summary for a person
  nlohmann::json summary;            // the summary as --json prints it
  struct Finding {
    std::string reproducer, signature;
  };
  std::vector<Finding> findings;
  int exitCode = 0;  // 0 clean, 1 a violation, 3 insufficient coverage
  bool interrupted = false;
};

RunOutcome runOutcome(const CampaignSummary& s);
RunOutcome runOutcome(const DispatchSummary& s);
RunOutcome runOutcome(const LayerSummary& s);

// The command's printing: the reports and the summary on stderr; on stdout the JSON summary
// (json) or each finding's reproducer path and signature line. Returns the exit code: 128 +
// the signal that stopped the run, else the run's.
int printOutcome(const RunOutcome& outcome, bool json, const volatile std::sig_atomic_t* stop);

}  // namespace moe::fuzz
