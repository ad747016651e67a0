// Replay of the Lean RoutingTests through the fuzzer's own vector reader and verdict code
// (fuzz/src/replay.cpp): against the oracle alone, and against every built-in router this
// CPU can run, as issue 5 asks once the fuzzer provides the verdict.
#include <gtest/gtest.h>

#include <moe/fuzz/router.hpp>
#include <moe/fuzz/vectors.hpp>

#include "lean_vectors.hpp"

namespace moe::lean {
namespace {

std::string firstLines(const moe::fuzz::ReplaySummary& s) {
  std::string out;
  for (std::size_t i = 0; i < s.lines.size() && i < 15; ++i) out += s.lines[i] + "\n";
  return out;
}

std::size_t routingTests() {
  return testsOfType(vectors(), "RoutingTest").size();
}

TEST(LeanReplayThroughFuzz, OracleAgreesThroughTheFuzzReader) {
  const auto summary = moe::fuzz::replayVectors(vectors(), nullptr, {});
  EXPECT_EQ(summary.failed, 0) << firstLines(summary);
  EXPECT_EQ(static_cast<std::size_t>(summary.passed), routingTests());
}

TEST(LeanReplayThroughFuzz, EveryBuiltinRouterPassesTheVerdict) {
  std::size_t routers = 0;
  for (const std::string& name : moe::fuzz::builtinRouterNames()) {
    const auto router = moe::fuzz::openRouter(name);
    const auto summary = moe::fuzz::replayVectors(vectors(), router.get(), {});
    EXPECT_EQ(summary.failed, 0) << name << ":\n" << firstLines(summary);
    std::printf("%s: %d passed, %d failed, %d skipped\n", name.c_str(), summary.passed,
                summary.failed, summary.skipped);
    ++routers;
  }
  EXPECT_GE(routers, 1u);
}

}  // namespace
}  // namespace moe::lean
