// The dispatch door through the real moe-oracle command: `fuzz --impl lib.so` picks the door
// by the exported moe_dispatch_v1; each broken kernel is caught with its kind and a shrunk
// reproducer that `replay` judges again and `explain` tells; the in-tree kernel and a correct
// C kernel run clean; a crashing, stray-writing or hanging kernel is a finding and the run
// survives it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "mini_schema.hpp"
#include "run_oracle.hpp"

namespace moe::fuzz {
namespace {

using testing::freshDir;
using testing::runOracle;

std::string lib(const std::string& variant) {
  return std::string(MOE_LIB_DIR) + "/libmoe_dispatch_test_" + variant + ".so";
}

// The C program `source` built against the test dispatcher `variant` (in `out`) and run: its
// exit code and output, or, when it does not build, -1 and the compiler's messages.
testing::RunResult buildAndRun(const std::string& source, const std::string& out,
                               const std::string& variant) {
  const std::string exe = out + "/repro-" + variant;
  const auto built =
      testing::runShell(std::string(MOE_C_COMPILER) + " -std=c99 -Wall -Werror -I " +
                        MOE_IMPL_INCLUDE + " " + source + " -o " + exe + " -L" + MOE_LIB_DIR +
                        " -lmoe_dispatch_test_" + variant + " -Wl,-rpath," + MOE_LIB_DIR + " 2>&1");
  if (built.exitCode != 0) return {-1, "does not build: " + built.out};
  return testing::runShell(exe + " 2>&1");
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
  // The file is what the schema it names says (lean-traces/moe_vectors_v1.schema.json).
  std::ifstream schemaText(MOE_VECTORS_SCHEMA), reproducerText(file);
  const moe::lean::MiniSchema schema(nlohmann::json::parse(schemaText));
  const auto errors = schema.validate(nlohmann::json::parse(reproducerText));
  EXPECT_TRUE(errors.empty()) << file << ": " << errors.front();
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

// The door's plain path (--in-process: no child, no guard pages): the same verdict, so a
// correct kernel runs clean and a broken one is caught with its kind, and replay reruns it
// in-process too.
TEST(DispatchDoor, InProcessJudgesTheSame) {
  const std::string clean = freshDir("dispatch-in-process-clean");
  auto r = runOracle("fuzz --in-process --json --seconds 3 --seed 5 --experts 0-300 --impl " +
                     lib("correct") + " --out " + clean);
  ASSERT_EQ(r.exitCode, 0) << r.out;
  EXPECT_GT(nlohmann::json::parse(r.out)["passed"].get<int64_t>(), 50);
  const std::string out = freshDir("dispatch-in-process");
  r = runOracle("fuzz --in-process --json --seconds 20 --seed 3 --shrink-seconds 5 --impl " +
                lib("capacity_last") + " --out " + out);
  ASSERT_EQ(r.exitCode, 1) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["violations"].size(), 1u) << j;
  EXPECT_EQ(j["violations"][0]["kind"], "capacity-order");
  const std::string file = j["violations"][0]["reproducer"];
  EXPECT_EQ(runOracle("replay --in-process " + file + " --impl " + lib("capacity_last")).exitCode,
            1);
  EXPECT_EQ(runOracle("replay --in-process " + file + " --impl " + lib("correct")).exitCode, 0);
}

// A case past 2^24 slots (where a float index stops being exact) is drawn and judged, not
// only planned: T = 2,097,153 and k = 8 force 16,777,224 slots; one case (seconds 1 ends the
// run after it) takes a few seconds.
TEST(DispatchDoor, ACasePast2To24SlotsIsDrawnAndJudged) {
  const std::string out = freshDir("dispatch-huge");
  const auto r = runOracle(std::string("fuzz --json --seconds 1 --seed 2 --tokens 2097153 --k 8 "
                                       "--experts 1-64 --min-tokens 1 --impl ") +
                           MOE_EIGEN_DISPATCH + " --out " + out);
  ASSERT_EQ(r.exitCode, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GE(j["coverage"]["slots"].value("16777216+", 0), 1) << j["coverage"];
  EXPECT_GE(j["slots"].get<int64_t>(), int64_t{1} << 24) << j;
}

// A finding that only a case past 2^24 slots shows (a slot index through a float) keeps
// its shape when shrunk, but only the slots that show it: the reproducer is kilobytes (runs
// of empty slots), not the gigabyte the whole case would be, and still replays.
TEST(DispatchDoor, AFindingPast2To24SlotsShrinksToASmallReproducer) {
  const std::string out = freshDir("dispatch-huge-finding");
  // Seed 1: its one case keeps slots past 2^24 that a float index misplaces.
  const auto r = runOracle(std::string("fuzz --json --seconds 1 --seed 1 --tokens 2097153 --k 8 "
                                       "--experts 1-64 --min-tokens 1 --shrink-seconds 240 "
                                       "--impl ") +
                           lib("float_index") + " --out " + out);
  ASSERT_EQ(r.exitCode, 1) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["violations"].size(), 1u) << j;
  const std::string file = j["violations"][0]["reproducer"];
  EXPECT_LT(std::filesystem::file_size(file), 64u * 1024u) << file;
  std::ifstream in(file);
  const auto repro = nlohmann::json::parse(in);
  const auto& c = repro["testGroups"][0]["tests"][0]["case"];
  EXPECT_GE(c["tokens"].get<int64_t>() * c["k"].get<int64_t>(), int64_t{1} << 24) << c["tokens"];
  EXPECT_EQ(runOracle("replay " + file).exitCode, 0);
  EXPECT_EQ(runOracle("replay " + file + " --impl " + lib("float_index")).exitCode, 1);
  EXPECT_EQ(runOracle("replay " + file + " --impl " + lib("correct")).exitCode, 0);
  // Its C program fills the empty slots run by run: small, and it reproduces.
  const auto c99 = runOracle("explain --as c " + file);
  ASSERT_EQ(c99.exitCode, 0) << c99.out;
  EXPECT_LT(c99.out.size(), 64u * 1024u);
  const std::string source = out + "/repro.c";
  std::ofstream(source) << c99.out;
  for (const auto& [variant, want] : {std::pair{"float_index", 1}, std::pair{"correct", 0}}) {
    const auto ran = buildAndRun(source, out, variant);
    EXPECT_EQ(ran.exitCode, want) << variant << "\n" << ran.out;
  }
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

// explain --as python|c on a dispatch reproducer: a program calling the user's dispatcher.
TEST(DispatchDoor, ExplainAsWritesADispatchSnippet) {
  const std::string out = freshDir("dispatch-snippet");
  const auto r = runOracle("fuzz --json --seconds 20 --seed 3 --shrink-seconds 5 --impl " +
                           lib("capacity_last") + " --out " + out);
  ASSERT_EQ(r.exitCode, 1) << r.out;
  const std::string file = nlohmann::json::parse(r.out)["violations"][0]["reproducer"];
  const auto py = runOracle("explain --as python " + file);
  ASSERT_EQ(py.exitCode, 0) << py.out;
  EXPECT_NE(py.out.find("dispatch = None"), std::string::npos) << py.out;
  EXPECT_NE(py.out.find("spec_sorted_slots = ["), std::string::npos) << py.out;
  EXPECT_NE(py.out.find("capacity-order"), std::string::npos) << py.out;
  const auto c = runOracle("explain --as c " + file);
  ASSERT_EQ(c.exitCode, 0) << c.out;
  EXPECT_NE(c.out.find("moe_dispatch_v1(tokens, k, experts, block, capacity, ids"),
            std::string::npos)
      << c.out;
  // Built with the broken kernel it reports the difference (exit 1); with a correct one, 0.
  const std::string source = out + "/repro.c";
  std::ofstream(source) << c.out;
  for (const auto& [variant, want] : {std::pair{"capacity_last", 1}, std::pair{"correct", 0}}) {
    const auto ran = buildAndRun(source, out, variant);
    EXPECT_EQ(ran.exitCode, want) << variant << "\n" << ran.out;
  }
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
