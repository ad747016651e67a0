// A case's family as moe_route_params_v2 (route_abi.h), for every adapter that calls
// moe_route_v2 (a built-in router; a library, whose door carries these very params to the
// child). The values pass as they are, invalid ones included: rejecting them is the
// kernel's job, and the verdict checks it does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/contract.hpp"
#include "moe/route_abi.h"

namespace moe::fuzz {

// Family's enums are route_abi.h's values (fuzz/case cannot see the header).
static_assert(static_cast<int32_t>(ScoreFunction::kSoftmax) == MOE_SCORE_SOFTMAX);
static_assert(static_cast<int32_t>(ScoreFunction::kSigmoid) == MOE_SCORE_SIGMOID);
static_assert(static_cast<int32_t>(GroupScoreFunction::kMax) == MOE_GROUP_MAX);
static_assert(static_cast<int32_t>(GroupScoreFunction::kTop2Sum) == MOE_GROUP_TOP2_SUM);

inline moe_route_params_v2 paramsV2(const Family& f, int32_t tokens, int32_t experts, int32_t k,
                                    const float* bias) {
  moe_route_params_v2 p{};
  p.struct_size =
      static_cast<uint32_t>(sizeof(moe_route_params_v2) - static_cast<size_t>(f.structShort));
  p.tokens = tokens;
  p.experts = experts;
  p.k = k;
  p.score = static_cast<int32_t>(f.score);
  p.bias = bias;
  p.groups = f.groups;
  p.topk_groups = f.topkGroups;
  p.group_score = static_cast<int32_t>(f.groupScore);
  p.renormalize = f.renormalize;
  p.scale = f.scale;
  return p;
}

// moe_route_params_v2 in a door's message (door.hpp's integers, to the child that calls the
// library): its bytes in kParamsScalars integers. The bias pointer is the child's, from the
// call's bias buffer.
inline constexpr std::size_t kParamsScalars = (sizeof(moe_route_params_v2) + 7) / 8;

inline void paramsToScalars(const moe_route_params_v2& p, int64_t* scalars) {
  std::memcpy(scalars, &p, sizeof p);
}

inline moe_route_params_v2 paramsFromScalars(const int64_t* scalars, const float* bias) {
  moe_route_params_v2 p;
  std::memcpy(&p, scalars, sizeof p);
  p.bias = bias;
  return p;
}

// Which entry point a library is fuzzed through: `abi` "" (v2 when exported, else v1),
// kAbiV1 or kAbiV2. Throws RouterLoadError when the library lacks what is asked.
bool chooseAbi(const std::string& abi, bool hasV1, bool hasV2, const std::string& path);
// parseContract, then the contract must be for the entry point it came from (a v2 contract
// without "abi" is v2's). Throws std::invalid_argument.
Contract parseContractFor(std::string_view text, bool v2);

using AbiRouteV2 = int (*)(const moe_route_params_v2*, const float*, int32_t*, float*);

}  // namespace moe::fuzz
