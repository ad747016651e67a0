// fuzz_gates: the verdict's own budgets (property). The binary32 evaluation of the spec
// (gatesVecSpec<float>) must always be judged exact or acceptable: if it is not, the
// derived probability or gate budget in docs/fuzz.md is wrong, not the spec.
#include <cstddef>
#include <cstdint>

#include "moe/fuzz/decision_coverage.hpp"
#include "moe/fuzz/router.hpp"
#include "target_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moe::fuzz;
  static const auto spec = makeSpec32Router();
  static Judge judge;
  const Case c = decodeCase(std::span<const uint8_t>(data, size), maxExpertsFromEnv());
  const LevelCounters before = judge.levels();
  CaseResult r = judge.run(*spec, c);
  markVerdictSignals(0, verdictSignals(before, judge.levels(), r), r.tokens.size());
  markCaseShape(c.experts, c.k);
  if (r.violation) reportAndAbort(mismatchReport(*spec, c, r));
  return 0;
}
