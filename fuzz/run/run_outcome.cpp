#include "moe/fuzz/run_outcome.hpp"

#include <cstdio>
#include <iostream>

namespace moe::fuzz {

namespace {

template <class Summary, class Found>
RunOutcome outcomeOf(const Summary& s, const std::vector<Found>& found, nlohmann::json summary,
                     std::string text) {
  RunOutcome o;
  for (const auto& f : found) {
    o.reports.push_back(f.report);
    o.findings.push_back({f.reproducer, f.signature});
  }
  o.summary = std::move(summary);
  o.text = std::move(text);
  o.exitCode = s.exitCode();
  o.interrupted = s.interrupted;
  return o;
}

}  // namespace

RunOutcome runOutcome(const CampaignSummary& s) {
  return outcomeOf(s, s.violations, summaryJSON(s), summaryText(s));
}

RunOutcome runOutcome(const DispatchSummary& s) {
  return outcomeOf(s, s.findings, dispatchSummaryJSON(s), dispatchSummaryText(s));
}

RunOutcome runOutcome(const LayerSummary& s) {
  return outcomeOf(s, s.findings, layerSummaryJSON(s), layerSummaryText(s));
}

int printOutcome(const RunOutcome& o, bool json, const volatile std::sig_atomic_t* stop) {
  for (const auto& report : o.reports) std::fputs(report.c_str(), stderr);
  std::fputs(o.text.c_str(), stderr);
  if (json) {
    std::cout << o.summary.dump() << "\n";
  } else {
    for (const auto& f : o.findings) {
      if (!f.reproducer.empty()) std::cout << "reproducer: " << f.reproducer << "\n";
      std::cout << f.signature << "\n";
    }
  }
  if (stop && *stop) return 128 + *stop;
  return o.exitCode;
}

}  // namespace moe::fuzz
