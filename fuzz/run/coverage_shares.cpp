// CoverageShares (coverage_shares.hpp).
#include "moe/fuzz/coverage_shares.hpp"

#include <fmt/format.h>

#include "moe/fuzz/model_shapes.hpp"

namespace moe::fuzz {

void CoverageShares::add(const Case& c, const TokenVerdicts& judged) {
  const auto n = static_cast<uint64_t>(judged.size());
  tokens += n;
  if (isModelShape(c.experts, c.k, c.tokens)) modelShapes += n;
  if (isDegenerateShape(c.experts, c.k, c.tokens)) {
    degenerate += n;
    ++degenerateCases;
  }
  (c.modelLike ? modelLike : adversarial) += n;
  // The first level's plain non-real rows carry no Verdict; the ladder's do.
  nonreal += judged.plainNonrealRows();
  for (const Verdict& v : judged.whole()) {
    if (v.outcome == Outcome::kAcceptable && v.reason == "nonreal-row") ++nonreal;
  }
}

namespace {

double fraction(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

}  // namespace

nlohmann::json shareTokensJSON(const CoverageShares& s) {
  return {{"model_shapes", s.modelShapes},
          {"degenerate", s.degenerate},
          {"nonreal", s.nonreal},
          {"model_like", s.modelLike},
          {"adversarial", s.adversarial}};
}

nlohmann::json sharesJSON(const CoverageShares& s) {
  const nlohmann::json tokens = shareTokensJSON(s);
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, n] : tokens.items()) j[name] = fraction(n.get<uint64_t>(), s.tokens);
  return j;
}

std::string sharesText(const CoverageShares& s) {
  auto pct = [&](uint64_t n) { return 100.0 * fraction(n, s.tokens); };
  return fmt::format(
      "model shapes {:.1f}%, degenerate {:.1f}% ({} cases), non-real rows {:.1f}%; logits "
      "model-like {:.1f}%, adversarial {:.1f}%",
      pct(s.modelShapes), pct(s.degenerate), s.degenerateCases, pct(s.nonreal), pct(s.modelLike),
      pct(s.adversarial));
}

}  // namespace moe::fuzz
