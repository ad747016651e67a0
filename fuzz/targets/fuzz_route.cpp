// fuzz_route: every built-in router (differential, vs the oracle). The case's variant byte
// picks the router, so one corpus covers all of them; the verdict (fuzz/judge/verdict_*.cpp)
// checks structure, selection, ties, slot order, gates and batch invariance.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "moe/fuzz/decision_coverage.hpp"
#include "moe/fuzz/router.hpp"
#include "target_common.hpp"

namespace {

const std::vector<std::unique_ptr<moe::fuzz::Router>>& routers() {
  static const auto all = [] {
    std::vector<std::unique_ptr<moe::fuzz::Router>> out;
    for (const auto& name : moe::fuzz::builtinRouterNames()) {
      if (moe::fuzz::builtinRouterAvailable(name)) out.push_back(moe::fuzz::openRouter(name));
    }
    return out;
  }();
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moe::fuzz;
  const Case c = decodeCase(std::span<const uint8_t>(data, size), maxExpertsFromEnv());
  const auto& all = routers();
  if (all.empty()) return 0;
  const size_t index = c.variant % all.size();
  const Router& router = *all[index];
  static Judge judge;
  const LevelCounters before = judge.levels();
  CaseResult r = judge.run(router, c);
  markVerdictSignals(index, verdictSignals(before, judge.levels(), r), r.tokens.size());
  if (r.violation) reportAndAbort(mismatchReport(router, c, r));
  return 0;
}
