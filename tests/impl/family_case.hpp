// A moe_route_v2 case's parameters as the routers' tests write them (route_abi.h's fields,
// typed), for calls through the ABI and, converted, for the judge.
#pragma once

#include <cstdint>
#include <vector>

namespace moe::test {

struct FamilyCase {
  int32_t experts = 0;
  int32_t k = 0;
  bool sigmoid = false;
  std::vector<float> bias;  // empty: none
  int32_t groups = 1;
  int32_t topkGroups = 1;
  bool top2Sum = false;
  bool renormalize = false;
  float scale = 1.0f;
};

}  // namespace moe::test
