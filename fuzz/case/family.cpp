// The routing family's parameters of a moe_route_v2 case: their domain, their
// JSON, and the generator that draws them (only what the router's contract lists).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/contract.hpp"
#include "moe/fuzz/float_bits.hpp"

namespace moe::fuzz {

namespace {

// As the call passes them (and the case's JSON holds them): route_abi.h's ints.
int32_t raw(ScoreFunction s) {
  return static_cast<int32_t>(s);
}
int32_t raw(GroupScoreFunction g) {
  return static_cast<int32_t>(g);
}

}  // namespace

std::string familyInvalidReason(const Family& f, int32_t experts) {
  if (f.structShort > 0) return fmt::format("struct_size {} bytes short", f.structShort);
  if (f.score != ScoreFunction::kSoftmax && f.score != ScoreFunction::kSigmoid) {
    return fmt::format("score {} is not MOE_SCORE_*", raw(f.score));
  }
  if (f.renormalize != 0 && f.renormalize != 1) {
    return fmt::format("renormalize {} is not 0 or 1", f.renormalize);
  }
  if (!std::isfinite(f.scale)) return fmt::format("scale {} is not finite", decimal32(f.scale));
  if (!f.bias.empty() && f.bias.size() != static_cast<size_t>(experts)) {
    return fmt::format("bias has {} values for {} experts", f.bias.size(), experts);
  }
  if (f.groups < 1) return fmt::format("groups {} < 1", f.groups);
  if (experts % f.groups != 0) {
    return fmt::format("groups {} does not divide {} experts", f.groups, experts);
  }
  if (f.topkGroups < 1 || f.topkGroups > f.groups) {
    return fmt::format("topk_groups {} outside 1..{}", f.topkGroups, f.groups);
  }
  if (f.groups > 1) {
    if (f.groupScore != GroupScoreFunction::kMax && f.groupScore != GroupScoreFunction::kTop2Sum) {
      return fmt::format("group_score {} is not MOE_GROUP_*", raw(f.groupScore));
    }
    if (f.groupScore == GroupScoreFunction::kTop2Sum && experts / f.groups < 2) {
      return fmt::format("top2-sum needs groups of 2 or more experts, groups of {}",
                         experts / f.groups);
    }
  }
  return "";
}

int32_t familyEligible(const Family& f, int32_t experts) {
  if (f.groups <= 1) return experts;
  return f.topkGroups * (experts / f.groups);
}

std::string familyText(const Family& f) {
  std::string s = f.score == ScoreFunction::kSoftmax   ? "softmax"
                  : f.score == ScoreFunction::kSigmoid ? "sigmoid"
                                                       : fmt::format("score {}", raw(f.score));
  s += f.bias.empty() ? ", no bias" : ", bias";
  if (f.groups != 1) {
    s += fmt::format(", G {} top {} by {}", f.groups, f.topkGroups,
                     f.groupScore == GroupScoreFunction::kMax ? "max"
                     : f.groupScore == GroupScoreFunction::kTop2Sum
                         ? "top2-sum"
                         : fmt::format("group_score {}", raw(f.groupScore)));
  }
  s += f.renormalize == 1   ? ", renorm"
       : f.renormalize == 0 ? ", raw"
                            : fmt::format(", renormalize {}", f.renormalize);
  s += fmt::format(", scale {}", decimal32(f.scale));
  if (f.structShort > 0) s += fmt::format(", struct_size {} short", f.structShort);
  return s;
}

nlohmann::json familyToJSON(const Family& f) {
  nlohmann::json j = {{"score", raw(f.score)},        {"groups", f.groups},
                      {"topk_groups", f.topkGroups},  {"group_score", raw(f.groupScore)},
                      {"renormalize", f.renormalize}, {"scale", hex32(f.scale)}};
  if (!f.bias.empty()) {
    auto& b = j["bias"] = nlohmann::json::array();
    for (float v : f.bias) b.push_back(hex32(v));
  }
  if (f.structShort > 0) j["struct_short"] = f.structShort;
  return j;
}

Family familyFromJSON(const nlohmann::json& j, int32_t experts) {
  if (!j.is_object()) throw std::invalid_argument("case: \"family\" must be an object");
  Family f;
  f.score = static_cast<ScoreFunction>(j.value("score", 0));
  f.groups = j.value("groups", 1);
  f.topkGroups = j.value("topk_groups", 1);
  f.groupScore = static_cast<GroupScoreFunction>(j.value("group_score", 0));
  f.renormalize = j.value("renormalize", 1);
  f.scale = j.contains("scale") ? parseHex32(j.at("scale").get<std::string>()) : 1.0f;
  f.structShort = std::clamp(j.value("struct_short", 0), 0, 64);
  if (j.contains("bias")) {
    for (const auto& v : j.at("bias")) f.bias.push_back(parseHex32(v.get<std::string>()));
    if (f.bias.size() != static_cast<size_t>(experts)) {
      throw std::invalid_argument(fmt::format(
          "case: \"family.bias\" holds {} values for {} experts", f.bias.size(), experts));
    }
  }
  return f;
}

}  // namespace moe::fuzz
