// The routing family of a moe_route_v2 case, typed: its score and group score by name, its
// other fields as the call passes them. Converted to moe_route_params_v2 in one place
// (fuzz/routers/params_v2.hpp) and to the oracle's RouteParams in one (family_params.hpp).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace moe::fuzz {

// route_abi.h's MOE_SCORE_* and MOE_GROUP_*, with the same values (fuzz/routers checks them
// against the header). A case may hold any other int32_t value here: parameters outside
// the domain, which the call must reject.
enum class ScoreFunction : int32_t { kSoftmax = 0, kSigmoid = 1 };
enum class GroupScoreFunction : int32_t { kMax = 0, kTop2Sum = 1 };

// The routing family's parameters of a moe_route_v2 case (route_abi.h, moe_route_params_v2),
// as the call passes them: raw values, so that a case can also hold parameters outside
// their domain (the fuzzer draws some and requires MOE_ROUTE_EBADPARAMS, nothing written).
struct Family {
  ScoreFunction score = ScoreFunction::kSoftmax;
  std::vector<float> bias;  // `experts` values (the same for every token), or empty: NULL
  int32_t groups = 1;       // 1 = no grouping
  int32_t topkGroups = 1;
  GroupScoreFunction groupScore = GroupScoreFunction::kMax;  // ignored when groups == 1
  int32_t renormalize = 1;                                   // 0 or 1
  float scale = 1.0f;
  int32_t structShort = 0;  // > 0: struct_size this many bytes short of the struct (invalid)
  bool operator==(const Family&) const = default;
};

// Why the family's parameters are outside route_abi.h's domain for E experts (the spec's
// paramsValid, plus the ABI's enums, a finite scale and the full struct_size), or "" when
// they are valid.
std::string familyInvalidReason(const Family& f, int32_t experts);
// The experts a valid family makes eligible: E, or topk_groups * E / groups.
int32_t familyEligible(const Family& f, int32_t experts);
// "sigmoid, bias, G 8 top 4 by top2-sum, renorm, scale 2.5": for reports.
std::string familyText(const Family& f);

// The family's JSON inside a case's ("family": {...}); bias and scale as hex32 bits.
nlohmann::json familyToJSON(const Family& f);
Family familyFromJSON(const nlohmann::json& j, int32_t experts);

}  // namespace moe::fuzz
