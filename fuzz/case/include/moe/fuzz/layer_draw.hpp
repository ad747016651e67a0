// The layer door's generator (docs/fuzz.md "The layer door"): fused-layer cases at the
// hidden and intermediate sizes of real models (H a multiple of 64 and one off it), E up to
// 256, k up to 10, T up to 4,096 as the time allows, with the inputs that break layers:
// weights and activations that cancel, huge and tiny magnitudes (products that overflow or
// underflow binary32), bf16 edge values, and logits with exact and near ties.
#pragma once

#include <cstdint>
#include <string>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/contract.hpp"
#include "moe/fuzz/layer_case.hpp"
#include "moe/fuzz/shapes.hpp"

namespace moe::fuzz {

inline constexpr int64_t kLayerMaxTokens = 4096;
inline constexpr int64_t kLayerMaxExperts = 256;
inline constexpr int64_t kLayerMaxK = 10;
inline constexpr int64_t kLayerMaxHidden = 16384;
inline constexpr int64_t kLayerMaxIntermediate = 32768;

// The shapes a layer run draws (empty: the generator's own) and what one case may cost.
struct LayerDraw {
  IntSet tokens, k, experts, hidden, intermediate;
  bool f32 = true, bf16 = false;  // the contract's dtypes
  bool families = false;          // the contract lists routing families: draw them
  Families familySet;             // which (when `families`)
  // Binary32 weights one case may hold (E * 3 * H * I): a model's E shrinks, then its I,
  // to fit. And the multiply-adds of one case's spec (T * k * 3 * H * I): T shrinks to fit,
  // so that a case is judged in a fraction of a second.
  int64_t maxWeights = int64_t{1} << 22;
  int64_t maxWork = int64_t{1} << 26;
};

// The draw for a layer's contract and the command's lists (values and ranges, "" = not
// given): --tokens, --k, --experts, --hidden, --intermediate. Throws std::invalid_argument
// on a malformed list or one outside the generator's limits.
LayerDraw layerDrawFor(const Contract& contract, const std::string& tokens, const std::string& k,
                       const std::string& experts, const std::string& hidden,
                       const std::string& intermediate);

// A drawn case, with what the run's coverage counts: the style of its values ("uniform",
// "cancelling", "huge", "tiny", "bf16-edges", "sparse") and where its H and I came from
// (a model's name, or "small").
struct DrawnLayer {
  LayerCase c;
  const char* style = "uniform";
  const char* shape = "small";
};

DrawnLayer drawLayerCase(ByteSource& source, const LayerDraw& draw);

}  // namespace moe::fuzz
