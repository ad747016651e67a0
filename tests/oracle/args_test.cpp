// The checked entry point for router-level requests (E >= 1; k per policy).
#include "moe/oracle/args.hpp"

#include <gtest/gtest.h>

namespace moe::oracle {
namespace {

TEST(RoutingArgs, LeanPolicyAcceptsAnyNonNegativeK) {
  EXPECT_EQ(RoutingArgs::check(4, 0, KPolicy::kLean).k, 0u);
  EXPECT_EQ(RoutingArgs::check(4, 9, KPolicy::kLean).k, 9u);
  EXPECT_EQ(RoutingArgs::check(4, 2, KPolicy::kLean).experts, 4u);
}

TEST(RoutingArgs, StrictPolicyWantsKInOneToE) {
  EXPECT_EQ(RoutingArgs::check(4, 4, KPolicy::kStrict).k, 4u);
  EXPECT_THROW(RoutingArgs::check(4, 0, KPolicy::kStrict), SpecError);
  EXPECT_THROW(RoutingArgs::check(4, 5, KPolicy::kStrict), SpecError);
}

TEST(RoutingArgs, MessagesNameTheValue) {
  try {
    RoutingArgs::check(0, 1, KPolicy::kLean);
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("E = 0"), std::string::npos) << e.what();
  }
  try {
    RoutingArgs::check(8, -3, KPolicy::kLean);
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("k = -3"), std::string::npos) << e.what();
  }
  try {
    RoutingArgs::check(8, 9, KPolicy::kStrict);
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("1..E = 8"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moe::oracle
