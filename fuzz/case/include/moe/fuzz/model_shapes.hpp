// The shapes today's MoE models route at, and the classes a drawn shape falls in: the
// campaign's generator spends most of its tokens at model shapes (shape_draw.hpp) and the
// coverage summary counts the tokens of each class (coverage_shares.hpp), with the same
// definitions, so that what the draw aims at is what the summary reports.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "moe/fuzz/shapes.hpp"

namespace moe::fuzz {

// A model's routing shape: E routed experts, k kept per token.
struct ModelShape {
  int32_t experts = 0, k = 0;
  std::string_view models;  // "DeepSeek-V3 / R1": for docs and tests
};

// The (E, k) of today's open MoE models (published configurations), E from 8 to 512.
std::span<const ModelShape> modelShapes();

// A model shape: E in 8..512, k in 1..min(10, E), T >= 16 (the sizes models and their
// kernels route at: a prefill or a batched decode step).
inline constexpr int64_t kModelMinExperts = 8, kModelMaxExperts = 512;
inline constexpr int64_t kModelMaxK = 10, kModelMinTokens = 16;
bool isModelShape(int64_t experts, int64_t k, int64_t tokens);

// A degenerate shape: E <= 1, k = 0, k > E or T = 0 (every slot empty, or a choice of one).
bool isDegenerateShape(int64_t experts, int64_t k, int64_t tokens);

// The models' E and their neighbours (E - 16, E - 1, E + 1, E + 16), within 8..512: where a
// model's kernel meets a size it was not tuned for.
const IntSet& modelExpertSizes();

}  // namespace moe::fuzz
