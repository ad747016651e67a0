// One fused-layer case (moe_layer_v1, impl/include/moe/layer_abi.h): a batch of tokens, the
// router's logits and the stacked SwiGLU expert weights, as the call passes them. Values are
// binary32; a bf16 case holds only values that bf16 represents (widened exactly), so the same
// vectors serve both dtypes and a reproducer replays bit for bit.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "moe/fuzz/case.hpp"

namespace moe::fuzz {

enum class LayerDtype : int32_t { kF32 = 0, kBf16 = 1 };  // MOE_DTYPE_*
const char* layerDtypeName(LayerDtype d);                 // "f32", "bf16"

struct LayerCase {
  int32_t tokens = 1, hidden = 1, intermediate = 1, experts = 1, k = 1;
  LayerDtype dtype = LayerDtype::kF32;
  // The routing family (moe_route_params_v2); absent: softmax top-k renormalised (NULL).
  std::optional<Family> family;
  std::vector<float> x;       // [T, H]
  std::vector<float> logits;  // [T, E]
  std::vector<float> w13;     // [E, 2I, H]: expert e's W1 rows, then its W3 rows
  std::vector<float> w2;      // [E, H, I]

  std::span<const float> xRow(int32_t t) const {
    return {x.data() + static_cast<size_t>(t) * hidden, static_cast<size_t>(hidden)};
  }
  std::span<const float> logitRow(int32_t t) const {
    return {logits.data() + static_cast<size_t>(t) * experts, static_cast<size_t>(experts)};
  }
  // Row h of W1 (w13 row h) and of W3 (w13 row I + h) of expert e, H values each.
  const float* w1Row(int32_t e, int32_t h) const {
    return w13.data() + (static_cast<size_t>(e) * 2 * intermediate + h) * hidden;
  }
  const float* w3Row(int32_t e, int32_t h) const {
    return w13.data() + (static_cast<size_t>(e) * 2 * intermediate + intermediate + h) * hidden;
  }
  // Row c of W2 of expert e, I values.
  const float* w2Row(int32_t e, int32_t c) const {
    return w2.data() + (static_cast<size_t>(e) * hidden + c) * intermediate;
  }
  // Every buffer has the size its shape says (a malformed case is a bug of its maker).
  bool sizesConsistent() const;
};

// The case restricted to one token (the same weights), for the experiments that isolate a
// finding's cause and for shrinking.
LayerCase layerTokenCase(const LayerCase& c, int32_t t);

// bf16 round to nearest even of a binary32 (NaN stays NaN), widened back to binary32.
float roundToBf16(float v);
// Every value of v representable in bf16.
bool allBf16(std::span<const float> v);

// The case as JSON (a reproducer's "case"): the sizes, "dtype", the family when there is
// one, and every value as its binary32 bits in hex ("0x3f800000"), so it replays bit for
// bit. layerCaseFromJSON throws std::invalid_argument on a malformed case (a missing field,
// a size out of range, a buffer of the wrong length, a bf16 case with a value bf16 lacks).
nlohmann::json layerCaseJSON(const LayerCase& c);
LayerCase layerCaseFromJSON(const nlohmann::json& j);

// "T 4, H 64, I 32, E 8, k 2, f32" (+ the family when there is one): for reports.
std::string layerShapeText(const LayerCase& c);

}  // namespace moe::fuzz
