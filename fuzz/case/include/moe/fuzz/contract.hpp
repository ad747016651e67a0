// What a router promises (docs/interfaces.md, "Contract JSON fields"). A library without
// moe_route_v1_contract gets the defaults below; absent fields get them too.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "moe/fuzz/shapes.hpp"

namespace moe::fuzz {

enum class SelectsOn { kLogits, kProbabilities };
enum class SlotOrder { kRank, kAny };
// Which expert wins an exact tie: the spec's lower index, or any (torch.topk and
// std::sort-based kernels promise no order among equal values).
enum class TieOrder { kLowestIndex, kAny };
const char* tieOrderName(TieOrder t);
// "lowest-index" | "any"; throws std::invalid_argument naming `what` otherwise.
TieOrder parseTieOrder(std::string_view text, std::string_view what);

// The shapes a kernel supports ("shapes" in the contract); empty sets: any.
struct SupportedShapes {
  IntSet experts, k, tokens;    // "tokens": values and ranges, e.g. "1-65536" (no empty batch)
  int64_t maxTokens = 0;        // 0: any
  IntSet hidden, intermediate;  // moe_layer_v1: H and I
  bool any() const {
    return experts.empty() && k.empty() && tokens.empty() && maxTokens == 0 && hidden.empty() &&
           intermediate.empty();
  }
};

// |g - exact| <= spec32Factor * |g_spec32 - exact| + ulp * ulp32(exact) (+ the verdict's
// analytic floor, docs/fuzz.md "Gate budget").
struct GateBudget {
  double spec32Factor = 2.0;
  double ulp = 4.0;
};

// moe_route_v2 only (the routing family, route_abi.h): what the router supports, so that
// the fuzzer draws only that ("families" in the contract; absent: softmax, no groups, no
// bias). A kernel of one model's recipe lists exactly its values, or names the recipe.
struct Families {
  bool softmax = true;
  bool sigmoid = false;
  bool groups = false;        // groups > 1 may be drawn ("groups": true, or a list holding one)
  bool bias = false;          // a bias may be drawn
  bool biasRequired = false;  // "bias": "required": every case has one
  IntSet groupValues;         // "groups": [values] (1 = no grouping); empty: not restricted
  IntSet topkGroups;          // "topk_groups": [values]; empty: any in 1..groups
  std::vector<int32_t> groupScores;  // "group_score": MOE_GROUP_* allowed; empty: both
  std::vector<int32_t> renormalize;  // "renormalize": 0 and/or 1; empty: both
  std::vector<float> scales;         // "scale": the values; empty: the fuzzer's own
  std::vector<std::string> recipes;  // "recipes": named recipes (recipes.hpp), alone
  // Every score, groups and a bias: the whole family, nothing else narrowed.
  static Families everything() {
    Families f;
    f.softmax = f.sigmoid = f.groups = f.bias = true;
    return f;
  }
  // True when some field narrows the groups drawn (values, topk_groups or group_score).
  bool restrictsGroups() const {
    return !groupValues.empty() || !topkGroups.empty() || !groupScores.empty();
  }
};

// The families of named recipes ("deepseek-v3,kimi-k2", as --family takes them). Throws
// std::invalid_argument naming an unknown recipe and the known ones.
Families familiesOfRecipes(std::string_view names, std::string_view what);

inline constexpr std::string_view kAbiV1 = "moe_route_v1";
inline constexpr std::string_view kAbiV2 = "moe_route_v2";
inline constexpr std::string_view kAbiLayerV1 = "moe_layer_v1";

// moe_layer_v1 only (layer_abi.h): what a fused layer promises ("activation", "dtype",
// "accumulate", "budget_factor", "silu_ulp" and the shapes' "hidden" and "intermediate" in
// the contract). Its routing is promised by the rest of the contract, as a router's is.
struct LayerPromise {
  std::string activation = "swiglu";
  bool f32 = true, bf16 = false;  // "dtype": the input types the kernel takes
  std::string accumulate = "binary32";
  // The y budget of docs/fuzz.md ("The fused layer") times this (>= 1: the bound is derived
  // for any summation order, so a factor only widens it).
  double budgetFactor = 1.0;
  // c of the SiLU's exp: its result within c ulp of exp's (docs/fuzz.md).
  double siluUlp = 4.0;
};

struct Contract {
  std::string abi = std::string(kAbiV1);  // kAbiV1 or kAbiV2: which entry point is fuzzed
  bool v2() const { return abi == kAbiV2; }
  Families families;  // v2 only
  std::string name;
  SelectsOn selectsOn = SelectsOn::kProbabilities;
  SlotOrder slotOrder = SlotOrder::kAny;
  bool batchInvariant = false;
  std::string compute = "binary32";
  double expMaxUlp = 1.0;  // c in the probability budget (docs/fuzz.md)
  GateBudget gateBudget;
  std::string nonfiniteRows;
  TieOrder tieOrder = TieOrder::kLowestIndex;
  SupportedShapes shapes;
  LayerPromise layer;  // abi moe_layer_v1 only
  bool isLayer() const { return abi == kAbiLayerV1; }
};

// Parses the contract text; absent fields keep their defaults. Throws std::invalid_argument
// with the reason on text that is not a JSON object, on an unknown key (naming the nearest
// known one), or on a field of the wrong type or out of its range.
Contract parseContract(std::string_view json);
// The same on a JSON value already parsed (a reproducer's or a report's "contract"), so the
// contract travels as JSON and is never printed to be parsed again.
Contract parseContractJSON(const nlohmann::json& json);

// The shapes a run draws: the contract's "shapes", then the caller's lists over them (values
// and ranges, empty = not given), as --experts, --k and --tokens do. `prefix` names the lists
// in errors ("--" for the command's flags). Throws std::invalid_argument on a malformed list
// or a space where no case fits.
ShapeSpace shapeSpaceFor(const SupportedShapes& supported, std::string_view experts,
                         std::string_view k, std::string_view tokens, std::string_view prefix);
// The contract as JSON (every field, defaults included), and as its compact text.
nlohmann::json contractJSON(const Contract& c);
std::string contractToJSON(const Contract& c);

}  // namespace moe::fuzz
