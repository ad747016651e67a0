// EXPECT_ROUTE_MATCH(router, case): the router's output on the case, judged token by token
// by the fuzzer's judge against the oracle (fuzz/judge, docs/fuzz.md), as one gtest check.
// Silent on success; on failure it prints the violation's kind and certificate, then the
// token as `moe-oracle explain` tells it (token_text.hpp: the logits, the spec's kept set
// with exact probabilities and gates, the router's slots), as LLVM libc's EXPECT_MPFR_MATCH
// does for a math function against MPFR.
//
//   EXPECT_ROUTE_MATCH(router, c)          the judge's acceptance: no token is a violation
//                                          (near-ties within the rounding budget pass).
//   EXPECT_ROUTE_MATCH_EXACTLY(router, c)  also no near-tie leniency: every token with a
//                                          real row is the spec's decision exactly, for
//                                          inputs built to be clear of near-ties.
// ASSERT_ variants stop the test. `router` is a moe::fuzz::Router (fuzz::openRouter(name)
// gives a built-in one or a shared library's, kernel_router.hpp a function of this
// program), `c` a moe::fuzz::Case: routeCase builds a moe_route_v1 case, familyCase one of
// the routing family (moe_route_v2), judged against the family's spec.
//
// Installed: find_package(MoeOracle) and the target MoeOracle::gtest.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/router.hpp"

namespace moe::test {

// A case of `tokens` rows of `experts` logits each, routed with `threads` threads.
fuzz::Case routeCase(int32_t tokens, int32_t experts, int32_t k, std::vector<float> logits,
                     int32_t threads = 1);

// The same case routed through moe_route_v2 with the family's parameters.
fuzz::Case familyCase(int32_t tokens, int32_t experts, int32_t k, std::vector<float> logits,
                      fuzz::Family family, int32_t threads = 1);

// The predicate-formatters behind the macros (usable with EXPECT_PRED_FORMAT2 directly).
::testing::AssertionResult routeMatches(const char* routerText, const char* caseText,
                                        const fuzz::Router& router, const fuzz::Case& c);
::testing::AssertionResult routeMatchesExactly(const char* routerText, const char* caseText,
                                               const fuzz::Router& router, const fuzz::Case& c);

}  // namespace moe::test

#define EXPECT_ROUTE_MATCH(router, c) EXPECT_PRED_FORMAT2(::moe::test::routeMatches, router, c)
#define ASSERT_ROUTE_MATCH(router, c) ASSERT_PRED_FORMAT2(::moe::test::routeMatches, router, c)
#define EXPECT_ROUTE_MATCH_EXACTLY(router, c) \
  EXPECT_PRED_FORMAT2(::moe::test::routeMatchesExactly, router, c)
#define ASSERT_ROUTE_MATCH_EXACTLY(router, c) \
  ASSERT_PRED_FORMAT2(::moe::test::routeMatchesExactly, router, c)
