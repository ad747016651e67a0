// Hostile kernels and careless users, through the moe-oracle binary: a library
// that crashes, aborts, hangs, writes past its outputs or returns an undefined status, in
// moe_route_v1 or moe_route_v2, is a finding (its kind, a reproducer, exit 1) while
// moe-oracle itself never dies; every command-line and contract mistake is exit 2 with a
// message that names it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "run_oracle.hpp"

namespace moe::fuzz {
namespace {

using testing::freshDir;
using testing::runOracle;

std::string libFile(const std::string& stem) {
  return std::string(MOE_LIB_DIR) + "/lib" + stem + ".so";
}

std::string lib(const std::string& variant) {
  return libFile("moe_peer_" + variant);
}

struct Hostile {
  const char* library;  // libLIBRARY.so: a v1 peer, or a v2 build of the family router
  const char* router;   // its name in signatures (the contract's, else the file's)
  const char* kind;
  const char* signature;  // the tail of the signature line
};

class HostileKernel : public ::testing::TestWithParam<Hostile> {};

TEST_P(HostileKernel, IsAFindingWithAReproducerAndTheRunSurvives) {
  const Hostile h = GetParam();
  const std::string out = freshDir(std::string("hostile-") + h.library);
  // --keep-going: after the finding the same run goes on judging other cases.
  // E up to 64: each misbehaviour is on one small shape, and the test router is a naive
  // O(T E k) one whose largest cases take seconds on a loaded machine.
  const auto r = runOracle(
      "fuzz --json --keep-going --seconds 6 --seed 1 --call-timeout 0.5 --experts 1-64 "
      "--shrink-seconds 3 --impl " +
      libFile(h.library) + " --out " + out);
  ASSERT_EQ(r.exitCode, 1) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["violations"].size(), 1u) << j;  // one misbehaviour, one kind
  const auto& v = j["violations"][0];
  EXPECT_EQ(v["kind"], h.kind) << j["violations"];
  EXPECT_EQ(v["signature"], std::string("moe-oracle: ") + h.router + "-" + h.signature);
  EXPECT_GT(j["tokens"].get<int64_t>(), 1000) << "the run went on after the finding";
  EXPECT_GE(v["count"].get<int64_t>(), 2) << "the run met the misbehaviour only once";
  const std::string file = v["reproducer"];
  ASSERT_TRUE(std::filesystem::exists(file));
  // The reproducer replays the same way, isolated too: the finding again, exit 1, no crash.
  const auto replay =
      runOracle("replay " + file + " --call-timeout 0.5 --json --impl " + libFile(h.library));
  EXPECT_EQ(replay.exitCode, 1) << replay.out;
  EXPECT_NE(replay.out.find(h.kind), std::string::npos) << replay.out;
  // explain tells the recorded finding without running anything.
  const auto explain = runOracle("explain " + file);
  EXPECT_EQ(explain.exitCode, 0);
  EXPECT_NE(explain.out.find(h.kind), std::string::npos) << explain.out;
}

// Through moe_route_v1 (tests/fuzz/routers/peer_router.c) and through moe_route_v2 (bugs 6 to 9
// of tests/fuzz/broken_family/broken_family.cpp), each misbehaving on one shape or family.
INSTANTIATE_TEST_SUITE_P(
    EachMisbehaviour, HostileKernel,
    ::testing::Values(Hostile{"moe_peer_segv_e13", "moe_peer_segv_e13", "crash", "crash-SIGSEGV"},
                      Hostile{"moe_peer_abort_k3", "moe_peer_abort_k3", "crash", "crash-SIGABRT"},
                      Hostile{"moe_peer_hang_e7", "moe_peer_hang_e7", "hang", "hang-hang"},
                      Hostile{"moe_peer_oob_ids_e5", "moe_peer_oob_ids_e5", "out-of-bounds-write",
                              "out-of-bounds-write-ids"},
                      Hostile{"moe_peer_oob_gates_e6", "moe_peer_oob_gates_e6",
                              "out-of-bounds-write", "out-of-bounds-write-gates"},
                      Hostile{"moe_peer_status_77_k2", "moe_peer_status_77_k2", "bad-status",
                              "bad-status-status-77"},
                      Hostile{"moe_broken_family_segv_sigmoid_groups",
                              "broken-family-segv-sigmoid-groups", "crash", "crash-SIGSEGV"},
                      Hostile{"moe_broken_family_hang_top2_sum", "broken-family-hang-top2-sum",
                              "hang", "hang-hang"},
                      Hostile{"moe_broken_family_oob_ids_bias", "broken-family-oob-ids-bias",
                              "out-of-bounds-write", "out-of-bounds-write-ids"},
                      Hostile{"moe_broken_family_status_77_raw", "broken-family-status-77-raw",
                              "bad-status", "bad-status-status-77"}),
    [](const ::testing::TestParamInfo<Hostile>& info) { return std::string(info.param.library); });

TEST(HostileKernel, ACrashShrinksToTheShapeItNeeds) {
  const auto r = runOracle("fuzz --json --seconds 20 --seed 2 --experts 1-64 --impl " +
                           lib("segv_e13") + " --out " + freshDir("segv-shrink"));
  ASSERT_EQ(r.exitCode, 1) << r.out;
  const auto v = nlohmann::json::parse(r.out)["violations"][0];
  EXPECT_EQ(v["shape"]["experts"], 13) << "E = 13 is what it needs";
  EXPECT_LE(v["shape"]["tokens"].get<int>(), 1) << "it crashes whatever the batch";
}

TEST(HostileKernel, InProcessIsTheOptOut) {
  // The same library in this process: a crash of the library is a crash of the run.
  const auto r = runOracle("fuzz --in-process --experts 13 --seconds 2 --seed 1 --impl " +
                           lib("segv_e13") + " --out " + freshDir("in-process"));
  EXPECT_NE(r.exitCode, 0);
  EXPECT_NE(r.exitCode, 1);
}

// ---- Careless users. ---------------------------------------------------------------------

void expectUsageError(const std::string& args, const std::string& named) {
  const auto r = runOracle(args, /*withStderr=*/true);
  EXPECT_EQ(r.exitCode, 2) << args << "\n" << r.out;
  EXPECT_NE(r.out.find(named), std::string::npos)
      << args << ": message does not name " << named << "\n"
      << r.out;
  EXPECT_LT(r.out.size(), 2000u) << "a short message, not 309 digits";
}

TEST(CarelessUser, EveryNumericFlagIsChecked) {
  for (const char* v : {"0", "-1", "abc", "inf", "nan"}) {
    expectUsageError(std::string("fuzz --impl spec32 --seconds ") + v, "--seconds");
  }
  expectUsageError("fuzz --impl spec32 --seed -1", "--seed");
  expectUsageError("fuzz --impl spec32 --seed 18446744073709551616", "--seed");
  for (const char* v : {"-1", "nan", "inf", "0"}) {
    expectUsageError(std::string("fuzz --impl spec32 --gate-factor ") + v, "--gate-factor");
  }
  expectUsageError("fuzz --impl spec32 --call-timeout -2", "--call-timeout");
  expectUsageError("bogus", "fuzz, replay, explain, reproduce and list");
  expectUsageError("", "fuzz, replay, explain, reproduce or list");
  const auto version = runOracle("--version");
  EXPECT_EQ(version.exitCode, 0);
  EXPECT_NE(version.out.find("moe-oracle 0."), std::string::npos) << version.out;
}

TEST(CarelessUser, ContractTyposAreNamedWithTheNearestKey) {
  expectUsageError("fuzz --seconds 1 --impl " + lib("bad_contract"), "did you mean \"slot_order\"");
}

TEST(CarelessUser, ALibraryInTheCurrentDirectoryIsAPath) {
  const std::string cmd = "cd " + std::string(MOE_LIB_DIR) + " && " + MOE_ORACLE_BIN +
                          " fuzz --impl libmoe_peer_tie_high_any.so --seconds 1 --seed 1 --out " +
                          freshDir("relative") + " > /dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
}

TEST(CarelessUser, AnOutFolderThatCannotBeWrittenIsFoundBeforeFuzzing) {
  const std::string file = freshDir("out-is-a-file");
  std::ofstream(file) << "x";
  expectUsageError("fuzz --impl spec32 --seconds 30 --out " + file + "/sub", "--out");
}

TEST(CarelessUser, AReplayThatRanNothingIsNotAPass) {
  const std::string file = freshDir("nothing-to-run") + ".json";
  std::ofstream(file) << R"({"algorithm":"moe-topk-routing","testGroups":[{"type":"SoftmaxTest",)"
                      << R"("tests":[{"tcId":1}]}]})";
  expectUsageError("replay " + file, "no test read");
}

// In a log (not a terminal) progress comes as whole lines, never joined by '\r'.
TEST(CarelessUser, ProgressInALogIsLines) {
  const auto r =
      runOracle("fuzz --impl spec32 --seconds 11 --seed 1 --experts 8 --tokens 1 --out " +
                    freshDir("progress"),
                true);
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_EQ(r.out.find('\r'), std::string::npos);
  EXPECT_NE(r.out.find("cases/s\n"), std::string::npos) << r.out;
}

// Ctrl-C ends the run cleanly: the summary and --json are still written, exit 130.
TEST(CarelessUser, AnInterruptedRunStillReports) {
  const std::string json = freshDir("interrupted") + ".json";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string out = freshDir("interrupted-out");
    std::freopen(json.c_str(), "w", stdout);
    std::freopen("/dev/null", "w", stderr);
    execl(MOE_ORACLE_BIN, MOE_ORACLE_BIN, "fuzz", "--impl", "spec32", "--seconds", "60", "--json",
          "--out", out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  sleep(2);
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_TRUE(j["interrupted"].get<bool>());
  EXPECT_GT(j["cases"].get<int64_t>(), 0);
}

}  // namespace
}  // namespace moe::fuzz
