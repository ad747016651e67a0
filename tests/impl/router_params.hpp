// The parameter list shared by every per-router suite: each built-in router by name, and a
// test-name-safe spelling of it (gtest names allow no '-').
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace moe::test {

inline const char* const kBuiltinRouterNames[] = {"scalar-probs", "scalar-logits", "avx2-probs",
                                                  "avx2-logits",  "avx512-probs",  "avx512-logits",
                                                  "auto-probs",   "auto-logits"};

inline auto allBuiltinRouters() {
  return ::testing::ValuesIn(
      std::vector<std::string>(std::begin(kBuiltinRouterNames), std::end(kBuiltinRouterNames)));
}

inline std::string routerTestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

}  // namespace moe::test
