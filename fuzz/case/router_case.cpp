// routerCase: which generator a router's cases come from (router_case.hpp).
#include "moe/fuzz/router_case.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace moe::fuzz {

Case routerCase(ByteSource& source, const Contract& contract, const ShapeSpace& space) {
  return contract.v2() ? drawFamilyCase(source, space, contract.families) : drawCase(source, space);
}

ShapeSpace inputShapeSpace(const Contract& contract, int32_t maxExperts) {
  const int64_t maxE = std::clamp(maxExperts, 1, kMaxExperts);
  const SupportedShapes& s = contract.shapes;
  ShapeSpace space;
  space.experts = (s.experts.empty() ? IntSet::range(1, maxE) : s.experts).clamp(1, maxE);
  space.k = s.k;
  space.tokens = IntSet::range(
      1, s.maxTokens > 0 ? std::min<int64_t>(s.maxTokens, kMaxTokens) : int64_t{kMaxTokens});
  if (space.experts.empty()) {
    throw std::invalid_argument(
        fmt::format("the contract's shapes hold no E in 1..{} (the input decoder's limit, "
                    "MOE_FUZZ_MAX_EXPERTS): experts {}",
                    maxE, s.experts.text()));
  }
  space.validate();
  return space;
}

Case routerCase(std::span<const uint8_t> input, const Contract& contract, int32_t maxExperts) {
  if (!contract.v2()) return decodeCase(input, maxExperts);
  SpanSource source(input);
  Case c = routerCase(source, contract, inputShapeSpace(contract, maxExperts));
  // Whole tokens only: each row is judged alone, so the family's structures (copied
  // columns, a bias that cancels on token 0) survive the cut.
  const int32_t cap = std::max(1, kMaxLogits / std::max(c.experts, 1));
  if (c.tokens > cap) {
    c.tokens = cap;
    c.logits.resize(static_cast<size_t>(cap) * static_cast<size_t>(c.experts));
    c.split = std::min(c.split, cap);
  }
  return c;
}

}  // namespace moe::fuzz
