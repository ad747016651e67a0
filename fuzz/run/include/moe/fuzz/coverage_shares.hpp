// Where a campaign's judged tokens went (docs/fuzz.md, "Coverage"): at the shapes of
// today's models, at degenerate shapes, on non-real rows (judged on structure only), and on
// logits drawn like a model's or adversarially. The shape classes are the draw's own
// (model_shapes.hpp), so the summary reports what the draw aims at.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz {

struct CoverageShares {
  uint64_t tokens = 0;  // judged
  uint64_t modelShapes = 0, degenerate = 0, nonreal = 0, modelLike = 0, adversarial = 0;
  uint64_t degenerateCases = 0;  // judged cases of a degenerate shape (T = 0 ones judge no token)
  // A judged case and the verdicts of its judged tokens.
  void add(const Case& c, const TokenVerdicts& judged);
};

// {"model_shapes", "degenerate", "nonreal", "model_like", "adversarial"}: each a fraction of
// the tokens judged (0 when none was), and the same keys counting tokens.
nlohmann::json sharesJSON(const CoverageShares& s);
nlohmann::json shareTokensJSON(const CoverageShares& s);
// "model shapes 71.2%, degenerate 0.4% (37 cases), non-real rows 1.0%; logits model-like
// 45.1%, adversarial 54.9%"
std::string sharesText(const CoverageShares& s);

}  // namespace moe::fuzz
