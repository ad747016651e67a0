// What every per-router suite shares: the parameter list (each built-in router by name), a
// test-name-safe spelling of it (gtest names allow no '-'), and the fixture that finds the
// router and skips, with the reason, where this CPU lacks its ISA.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "moe/routers.hpp"

namespace moe::test {

// The names come from moe::builtinRouters(), not a copy of the list: a router added to impl/
// is tested here without an edit.
inline auto allBuiltinRouters() {
  std::vector<std::string> names;
  for (const BuiltinRouter& r : builtinRouters()) names.emplace_back(r.name);
  return ::testing::ValuesIn(names);
}

inline std::string routerTestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

class RouterTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    router_ = findRouter(GetParam());
    ASSERT_NE(router_, nullptr);
    if (!router_->available()) GTEST_SKIP() << GetParam() << ": this CPU lacks the ISA";
  }
  bool probsMode() const { return GetParam().ends_with("-probs"); }
  const BuiltinRouter* router_ = nullptr;
};

}  // namespace moe::test
