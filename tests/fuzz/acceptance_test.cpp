// Acceptance: the real moe-oracle binary, as a user runs it, catches every
// deliberately broken router library within 60 s (exit 1, the expected signature kind);
// every correct built-in router and the binary32 spec pass a short campaign (exit 0);
// bad usage and unloadable libraries exit 2.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "moe/fuzz/broken_routers.hpp"
#include "moe/fuzz/router.hpp"
#include "run_oracle.hpp"

namespace moe::fuzz {
namespace {

using testing::RunResult;

RunResult run(const std::string& args) {
  return testing::runOracle(args);
}

std::string outDir(const std::string& name) {
  return testing::freshDir("acceptance-" + name);
}

class BrokenLibrary : public ::testing::TestWithParam<int> {};

TEST_P(BrokenLibrary, IsCaughtWithin60Seconds) {
  int count;
  const BugInfo& bug = brokenRouterBugs(&count)[GetParam()];
  std::string file(bug.name);
  for (char& c : file) {
    if (c == '-') c = '_';
  }
  std::string lib = std::string(MOE_LIB_DIR) + "/libmoe_broken_" + file + ".so";
  ASSERT_TRUE(std::filesystem::exists(lib)) << lib;
  RunResult r = run("fuzz --impl " + lib + " --seconds 60 --seed 1 --json --out " + outDir(file));
  ASSERT_EQ(r.exitCode, 1) << "not caught: " << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["violations"].size(), 1u);
  const std::string kind = j["violations"][0]["kind"];
  const std::string signature = j["violations"][0]["signature"];
  std::string expected(bug.expectedKind);
  EXPECT_NE(("|" + expected + "|").find("|" + kind + "|"), std::string::npos)
      << bug.name << " caught as " << kind << ", expected one of " << expected;
  EXPECT_EQ(signature, "moe-oracle: moe_broken_" + file + "-" + kind);
  EXPECT_TRUE(std::filesystem::exists(j["violations"][0]["reproducer"].get<std::string>()));
  EXPECT_LT(j["seconds"].get<double>(), 60.0);
}

INSTANTIATE_TEST_SUITE_P(EveryBug, BrokenLibrary, ::testing::Range(0, 8),
                         [](const ::testing::TestParamInfo<int>& info) {
                           int count;
                           std::string n(brokenRouterBugs(&count)[info.param].name);
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

TEST(BrokenLibraries, AtLeastEightBugClasses) {
  int count;
  brokenRouterBugs(&count);
  EXPECT_GE(count, 8);
}

class CorrectRouter : public ::testing::TestWithParam<std::string> {};

TEST_P(CorrectRouter, PassesAShortCampaign) {
  const std::string name = GetParam();
  if (name != "spec32" && !builtinRouterAvailable(name)) {
    GTEST_SKIP() << name << " needs an ISA this CPU lacks";
  }
  RunResult r =
      run("fuzz --impl " + name + " --seconds 3 --seed 2026 --json --out " + outDir(name));
  ASSERT_EQ(r.exitCode, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdicts"]["violation"], 0);
  EXPECT_GT(j["cases"].get<int>(), 10);
  for (const char* key : {"impl", "seed", "seconds", "cases", "tokens", "cases_per_s", "verdicts",
                          "acceptable_reasons", "levels", "violations"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
}

INSTANTIATE_TEST_SUITE_P(Builtin, CorrectRouter,
                         ::testing::Values("spec32", "scalar-probs", "scalar-logits", "avx2-probs",
                                           "avx2-logits", "avx512-probs", "avx512-logits",
                                           "auto-probs", "auto-logits"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

TEST(CommandLine, BadUsageAndUnloadableLibrariesExit2) {
  EXPECT_EQ(run("").exitCode, 2);
  EXPECT_EQ(run("fuzz").exitCode, 2);
  EXPECT_EQ(run("fuzz --impl no-such-router --seconds 1").exitCode, 2);
  EXPECT_EQ(run("fuzz --impl /nonexistent/lib.so --seconds 1").exitCode, 2);
  EXPECT_EQ(run("fuzz --impl /etc/hostname.so --seconds 1").exitCode, 2);
  EXPECT_EQ(run("replay").exitCode, 2);
  EXPECT_EQ(run("fuzz --help").exitCode, 0);
}

}  // namespace
}  // namespace moe::fuzz
