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

// A call outside layer_abi.h's domain (the layer door draws some): the case's buffers as they
// are, the call changed in one way. The kernel owes the status the ABI gives for it
// (layerDueStatuses) and writes nothing. A route outside the family's domain is the case's
// family itself (familyInvalidReason), not a field here.
struct LayerBadCall {
  uint32_t structShort = 0;  // struct_size this many bytes short of the struct (EBADPARAMS)
  int32_t activation = 0;    // passed as activation; not MOE_ACT_SWIGLU (0): EBADPARAMS
  int32_t dtype = -1;        // >= 0: passed as dtype instead of the case's; not 0, 1: EBADPARAMS
  std::string negative;      // a size passed as negativeValue: "tokens", "hidden", ... (EBADSIZE)
  int32_t negativeValue = -1;
  std::string null;       // a buffer passed NULL: "x", "logits", "w13", "w2" or "y" (ENULL)
  bool overflow = false;  // hidden, intermediate passed as 2^20 and experts as 2^10: the
                          // weights' bytes pass 2^48 (EOVERFLOW)
  bool operator==(const LayerBadCall&) const = default;
};
// The call's parameters with a bad call applied (the case's own when it has none).
struct LayerCallParams {
  uint32_t structSize = 0;  // of moe_layer_params_v1; filled by the caller (ABI header)
  uint32_t structShort = 0;
  int32_t tokens = 0, hidden = 0, intermediate = 0, experts = 0, k = 0, activation = 0, dtype = 0;
  bool nullX = false, nullLogits = false, nullW13 = false, nullW2 = false, nullY = false;
};
struct LayerCase;
LayerCallParams layerCallParams(const LayerCase& c);
// "struct_size 4 bytes short", "k = -1", "x NULL", ...: for reports ("" without a bad call).
std::string layerBadCallText(const LayerBadCall& b);

struct LayerCase {
  int32_t tokens = 1, hidden = 1, intermediate = 1, experts = 1, k = 1;
  LayerDtype dtype = LayerDtype::kF32;
  // The routing family (moe_route_params_v2); absent: softmax top-k renormalised (NULL).
  std::optional<Family> family;
  std::vector<float> x;             // [T, H]
  std::vector<float> logits;        // [T, E]
  std::vector<float> w13;           // [E, 2I, H]: expert e's W1 rows, then its W3 rows
  std::vector<float> w2;            // [E, H, I]
  std::optional<LayerBadCall> bad;  // the call leaves the domain this way

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
// one, "bad_call" when the call leaves the domain, and every value as its binary32 bits in hex
// ("0x3f800000"), so it replays bit for bit. layerCaseFromJSON throws std::invalid_argument on a
// malformed case (a missing field, a size out of range, a buffer of the wrong length, a bf16 case
// with a value bf16 lacks).
nlohmann::json layerCaseJSON(const LayerCase& c);
LayerCase layerCaseFromJSON(const nlohmann::json& j);

// "T 4, H 64, I 32, E 8, k 2, f32" (+ the family when there is one): for reports.
std::string layerShapeText(const LayerCase& c);

}  // namespace moe::fuzz
