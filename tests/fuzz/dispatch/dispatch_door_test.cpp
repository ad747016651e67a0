// The dispatch door through the real moe-oracle command: `fuzz --impl lib.so` picks the door
// by the exported moe_dispatch_v1; each broken kernel is caught with its kind and a shrunk
// reproducer that `replay` judges again and `explain` tells; the in-tree kernel and a correct
// C kernel run clean; a crashing, stray-writing or hanging kernel is a finding and the run
// survives it.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "run_oracle.hpp"

namespace moe::fuzz {
namespace {

using testing::freshDir;
using testing::runOracle;

std::string lib(const std::string& variant) {
  return std::string(MOE_LIB_DIR) + "/libmoe_dispatch_test_" + variant + ".so";
}

struct Broken {
  const char* variant;
  const char* kind;
  const char* tag;
};

class BrokenDispatcher : public ::testing::TestWithParam<Broken> {};

TEST_P(BrokenDispatcher, IsCaughtWithItsKindAndAShrunkReproducer) {
  const Broken b = GetParam();
  const std::string out = freshDir(std::string("dispatch-") + b.variant);
  const auto r = runOracle("fuzz --json --seconds 20 --seed 3 --shrink-seconds 5 --impl " +
                           lib(b.variant) + " --out " + out);
  ASSERT_EQ(r.exitCode, 1) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["abi"], "moe_dispatch_v1");
  ASSERT_EQ(j["violations"].size(), 1u) << j;
  const auto& v = j["violations"][0];
  EXPECT_EQ(v["kind"], b.kind) << v;
  std::string signature = std::string("moe-oracle: moe_dispatch_test_") + b.variant + "-" + b.kind;
  if (*b.tag) signature += std::string("-") + b.tag;
  EXPECT_EQ(v["signature"], signature);
  // Shrunk: a handful of tokens, whatever the draw was.
  EXPECT_LE(v["shape"]["tokens"].get<int64_t>(), 8) << v;
  const std::string file = v["reproducer"];
  ASSERT_TRUE(std::filesystem::exists(file)) << file;
  // The recorded output is judged the same kind again; the kernel rerun still violates; the
  // in-tree kernel passes the case.
  EXPECT_EQ(runOracle("replay " + file).exitCode, 0);
  EXPECT_EQ(runOracle("replay " + file + " --impl " + lib(b.variant)).exitCode, 1);
  EXPECT_EQ(runOracle(std::string("replay ") + file + " --impl " + MOE_EIGEN_DISPATCH).exitCode, 0);
  const auto told = runOracle("explain " + file);
  EXPECT_EQ(told.exitCode, 0);
  EXPECT_NE(told.out.find(std::string("violation: ") + b.kind), std::string::npos) << told.out;
  EXPECT_NE(told.out.find("spec: rows"), std::string::npos) << told.out;
}

INSTANTIATE_TEST_SUITE_P(Kinds, BrokenDispatcher,
                         ::testing::Values(Broken{"last_block_unpadded", "bad-padding", ""},
                                           Broken{"pad_counted", "rows-count", ""},
                                           Broken{"capacity_last", "capacity-order", ""},
                                           Broken{"duplicate", "duplicated-slot", ""},
                                           Broken{"expert_order", "wrong-expert", ""},
                                           Broken{"drop_last", "dropped-slot", ""},
                                           Broken{"reverse_slots", "slot-order", ""},
                                           Broken{"segv", "crash", "SIGSEGV"},
                                           Broken{"oob", "out-of-bounds-write", "sorted_slots"}),
                         [](const ::testing::TestParamInfo<Broken>& info) {
                           return std::string(info.param.variant);
                         });

TEST(DispatchDoor, CorrectKernelsRunClean) {
  for (const std::string& impl :
       {std::string(MOE_EIGEN_DISPATCH), lib("correct"), lib("correct_any"), lib("reverse_any")}) {
    const std::string out = freshDir("dispatch-clean");
    // E up to 300: the C kernels make one pass over the slots per expert.
    const auto r = runOracle("fuzz --json --seconds 8 --seed 5 --experts 0-300 --impl " + impl +
                             " --out " + out);
    ASSERT_EQ(r.exitCode, 0) << impl << "\n" << r.out;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_GT(j["passed"].get<int64_t>(), 50) << j;
    EXPECT_GT(j["coverage"]["outside_domain"].get<int64_t>(), 0) << "statuses judged";
    EXPECT_TRUE(j["violations"].empty()) << j;
  }
}

TEST(DispatchDoor, TheInTreeKernelCrosses2To16SlotsAndEveryBlock) {
  const std::string out = freshDir("dispatch-large");
  const auto r = runOracle(std::string("fuzz --json --seconds 10 --seed 7 --tokens 8200-9000 "
                                       "--k 8 --block 1-256 --impl ") +
                           MOE_EIGEN_DISPATCH + " --out " + out);
  ASSERT_EQ(r.exitCode, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["coverage"]["slots"].value("65536-16777215", 0), 0) << j["coverage"];
}

TEST(DispatchDoor, AHangIsAFindingAndTheRunGoesOn) {
  const std::string out = freshDir("dispatch-hang");
  const auto r = runOracle(
      "fuzz --json --keep-going --seconds 8 --seed 1 --call-timeout 0.5 "
      "--shrink-seconds 2 --experts 5-9 --impl " +
      lib("hang") + " --out " + out);
  ASSERT_EQ(r.exitCode, 1) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["violations"].size(), 1u) << j;
  EXPECT_EQ(j["violations"][0]["kind"], "hang");
  EXPECT_EQ(j["violations"][0]["shape"]["experts"], 7);
  EXPECT_GT(j["passed"].get<int64_t>(), 10) << "the run went on after the hang";
}

TEST(DispatchDoor, BadUsageIsExit2WithAMessage) {
  // A router flag on a dispatch kernel, a dispatch flag on a router, a bad contract value.
  auto r = runOracle("fuzz --seconds 1 --family mixtral --impl " + lib("correct"), true);
  EXPECT_EQ(r.exitCode, 2) << r.out;
  EXPECT_NE(r.out.find("--family"), std::string::npos) << r.out;
  r = runOracle("fuzz --seconds 1 --block 4 --impl spec32", true);
  EXPECT_EQ(r.exitCode, 2) << r.out;
  EXPECT_NE(r.out.find("--block"), std::string::npos) << r.out;
  r = runOracle("fuzz --seconds 1 --block 0 --impl " + lib("correct"), true);
  EXPECT_EQ(r.exitCode, 2) << r.out;
  r = runOracle("fuzz --seconds 1 --abi moe_dispatch_v1 --impl spec32", true);
  EXPECT_EQ(r.exitCode, 2) << r.out;
}

}  // namespace
}  // namespace moe::fuzz
