// The per-router fixture with the router also behind the fuzzer's interface, so that a suite
// can hand it to EXPECT_ROUTE_MATCH (tests/support): the judge, not a reference written for
// the tests, says whether an output is right.
#pragma once

#include <memory>

#include "moe/fuzz/router.hpp"
#include "moe/test/route_match.hpp"
#include "router_params.hpp"

namespace moe::test {

class JudgedRouterTest : public RouterTest {
 protected:
  void SetUp() override {
    RouterTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    judged_ = fuzz::openRouter(GetParam());
  }
  std::unique_ptr<fuzz::Router> judged_;
};

}  // namespace moe::test
