// Hostile input for every moe-oracle subcommand and the vector loader behind them:
// truncated files, huge numbers, deep nesting, wrong types, sizes that claim gigabytes,
// non-UTF-8 bytes, missing files, libraries that cannot be loaded. Each must end in a
// clear message and exit 2: no crash (signal), no hang, memory bounded (the binary runs
// under a 2 GiB address-space limit, so an attempt to allocate what a size claims shows
// up as a crash or a bad_alloc instead of swapping the machine).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "run_process.hpp"

namespace fs = std::filesystem;
using moe::fuzz_campaign::ProcessResult;
using moe::fuzz_campaign::runProcess;

namespace {

// A well-formed golden-vector file: the base that the hostile files are cut from.
const std::string kValidVectors = R"({
  "algorithm": "moe-topk-routing",
  "schema": "moe_vectors_v1.schema.json",
  "generatorVersion": "fuzz-campaign-hostile-input-test",
  "provenance": {"source": "tests/fuzz_campaign"},
  "header": ["two experts, k = 1"],
  "notes": {},
  "numberOfTests": 1,
  "testGroups": [
    {"type": "RoutingTest", "tests": [
      {"tcId": 1, "comment": "1.0 beats 0.0", "flags": [], "result": "valid", "k": 1,
       "logits": ["0x3f800000", "0x00000000"], "ranks": [0, 1], "keptExperts": [0]}]}
  ]
})";

std::string withRoutingTest(const std::string& test) {
  return R"({"algorithm": "moe-topk-routing", "schema": "moe_vectors_v1.schema.json",
  "generatorVersion": "t", "provenance": {}, "header": [], "notes": {}, "numberOfTests": 1,
  "testGroups": [{"type": "RoutingTest", "tests": [)" +
         test + "]}]}";
}

std::string withReproducer(const std::string& fields) {
  return R"({"algorithm": "moe-topk-routing", "schema": "moe_vectors_v1.schema.json",
  "generatorVersion": "t", "provenance": {}, "header": [], "notes": {}, "numberOfTests": 1,
  "testGroups": [{"type": "RouterReproducer", "tests": [{"tcId": 1, "comment": "",
  "flags": [], "result": "invalid", "impl": "scalar-probs", "threads": 1,
  "verdict": "violation", "kind": "kept-set", "signature": "moe-oracle: scalar-probs-kept-set-E2-k1",
  "certificate": "", )" +
         fields + "}]}]}";
}

class HostileInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("moe-hostile-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& bytes) {
    fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }

  static ProcessResult moeOracle(const std::vector<std::string>& args) {
    std::vector<std::string> argv{MOE_ORACLE_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    return runProcess(argv);
  }

  // The rule for every hostile input: exit 2 with a message, never a signal or a hang.
  static void expectRejected(const std::vector<std::string>& args, const std::string& what) {
    ProcessResult r = moeOracle(args);
    std::string cmd = "moe-oracle";
    for (const auto& a : args) cmd += " " + a;
    EXPECT_TRUE(r.exited && r.exit_code == 2)
        << what << ": `" << cmd << "` ended with " << r.describe() << ", want exit 2\n"
        << r.output.substr(0, 2000);
    EXPECT_FALSE(r.output.empty()) << what << ": `" << cmd << "` said nothing";
    EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << what << ": " << r.output;
  }

  // Both subcommands that read a vector file, on the same hostile file.
  static void expectFileRejected(const fs::path& file, const std::string& what) {
    expectRejected({"replay", file.string()}, what + " (replay)");
    expectRejected({"explain", file.string()}, what + " (explain)");
  }

  fs::path dir_;
};

TEST_F(HostileInput, ValidBaseFileIsAccepted) {
  // Without this the rejections below could come from a harness that rejects everything.
  fs::path f = write("valid.json", kValidVectors);
  ProcessResult r = moeOracle({"replay", f.string()});
  EXPECT_TRUE(r.exited && r.exit_code == 0) << r.describe() << "\n" << r.output;
  r = moeOracle({"explain", f.string()});
  EXPECT_TRUE(r.exited && r.exit_code == 0) << r.describe() << "\n" << r.output;
}

TEST_F(HostileInput, TruncatedFiles) {
  const std::size_t n = kValidVectors.size();
  for (std::size_t cut : {std::size_t{0}, std::size_t{1}, n / 10, n / 3, n / 2, n - 40, n - 2}) {
    fs::path f = write("cut-" + std::to_string(cut) + ".json", kValidVectors.substr(0, cut));
    expectFileRejected(f, "file truncated to " + std::to_string(cut) + " bytes");
  }
}

TEST_F(HostileInput, HugeNumbers) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"k-1e400", R"({"tcId": 1, "result": "valid", "k": 1e400, "logits": ["0x3f800000"]})"},
      {"k-2^70", R"({"tcId": 1, "result": "valid", "k": 1180591620717411303424,
        "logits": ["0x3f800000"]})"},
      {"k-negative", R"({"tcId": 1, "result": "valid", "k": -2147483649,
        "logits": ["0x3f800000"]})"},
      {"tcId-1e308", R"({"tcId": 1e308, "result": "valid", "k": 1, "logits": ["0x3f800000"]})"},
      {"logit-too-wide", R"({"tcId": 1, "result": "valid", "k": 1,
        "logits": ["0xffffffffffffffffffff"]})"},
  };
  for (const auto& [name, test] : cases) {
    expectFileRejected(write(name + ".json", withRoutingTest(test)), "huge number: " + name);
  }
}

TEST_F(HostileInput, DeepNesting) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  expectFileRejected(write("deep-array.json", deep), "100,000 nested arrays");
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  objects += "1" + std::string(100000, '}');
  expectFileRejected(write("deep-object.json", objects), "100,000 nested objects");
  expectFileRejected(write("deep-in-tests.json", withRoutingTest(deep)),
                     "nesting inside testGroups");
}

TEST_F(HostileInput, WrongTypes) {
  const std::vector<std::pair<std::string, std::string>> files = {
      {"top-array", "[1, 2, 3]"},
      {"top-string", "\"moe\""},
      {"groups-string", R"({"algorithm": "moe-topk-routing", "testGroups": "none"})"},
      {"tests-object", R"({"algorithm": "moe-topk-routing", "testGroups": [{"type":
        "RoutingTest", "tests": {"tcId": 1}}]})"},
      {"k-string", withRoutingTest(R"({"tcId": 1, "result": "valid", "k": "2",
        "logits": ["0x3f800000"]})")},
      {"logits-numbers", withRoutingTest(R"({"tcId": 1, "result": "valid", "k": 1,
        "logits": [1.0, 0.0]})")},
      {"logit-not-hex", withRoutingTest(R"({"tcId": 1, "result": "valid", "k": 1,
        "logits": ["one", "0x00000000"]})")},
      {"logits-null", withRoutingTest(R"({"tcId": 1, "result": "valid", "k": 1,
        "logits": null})")},
  };
  for (const auto& [name, text] : files) {
    expectFileRejected(write(name + ".json", text), "wrong type: " + name);
  }
}

TEST_F(HostileInput, SizesThatClaimGigabytes) {
  // tokens * experts = 2^40 logits (4 TiB as floats) with one logit actually present.
  const std::string ids = R"("logits": ["0x3f800000"], "ids": [0], "gates": ["0x3f800000"])";
  expectFileRejected(
      write("tokens-experts-2^40.json",
            withReproducer(R"("tokens": 1048576, "experts": 1048576, "k": 1, )" + ids)),
      "tokens*experts = 2^40");
  expectFileRejected(
      write("k-2^31.json", withReproducer(R"("tokens": 1, "experts": 1, "k": 2147483647, )" + ids)),
      "k = 2^31 - 1");
  expectFileRejected(
      write("product-overflows.json",
            withReproducer(R"("tokens": 4294967296, "experts": 4294967296, "k": 1, )" + ids)),
      "tokens*experts overflows 64 bits");
  // A thread count is a request, not a size: clamping it is fine, spawning 10^8 threads is
  // not. Whatever the verdict, the run must end by itself, quickly and within the limits.
  const fs::path threads =
      write("threads-huge.json",
            withReproducer(R"("tokens": 1, "experts": 1, "k": 1, "threads": 100000000, )" + ids));
  for (const char* sub : {"replay", "explain"}) {
    ProcessResult r = moeOracle({sub, threads.string()});
    EXPECT_TRUE(r.exited && r.exit_code >= 0 && r.exit_code <= 2)
        << "threads = 10^8 (" << sub << "): " << r.describe() << "\n"
        << r.output;
  }
}

TEST_F(HostileInput, NonUtf8Bytes) {
  expectFileRejected(write("latin1.json", withRoutingTest("{\"tcId\": 1, \"comment\": \"\xe9\xff\","
                                                          " \"result\": \"valid\", \"k\": 1, "
                                                          "\"logits\": [\"0x3f800000\"]}")),
                     "invalid UTF-8 in a string");
  std::string binary;
  for (int i = 0; i < 4096; ++i) binary.push_back(static_cast<char>((i * 131 + 7) & 0xff));
  expectFileRejected(write("binary.json", binary), "binary garbage");
  expectFileRejected(write("nul.json", std::string("{\"algorithm\"\0:1}", 16)), "a NUL byte");
}

TEST_F(HostileInput, MissingFiles) {
  const std::string missing = (dir_ / "does-not-exist.json").string();
  expectRejected({"replay", missing}, "missing file (replay)");
  expectRejected({"explain", missing}, "missing file (explain)");
  expectRejected({"replay", dir_.string()}, "a directory given as the file (replay)");
  expectRejected({"fuzz", "--impl", (dir_ / "missing.so").string(), "--seconds", "1"},
                 "missing library (fuzz)");
  expectRejected({"replay", write("ok.json", kValidVectors).string(), "--impl",
                  (dir_ / "missing.so").string()},
                 "missing library (replay --impl)");
}

TEST_F(HostileInput, UnloadableLibraries) {
  const fs::path text = write("not-elf.so", "this is not an ELF file\n");
  const fs::path empty = write("empty.so", "");
  const fs::path truncated_elf = write("truncated-elf.so", std::string("\x7f"
                                                                       "ELF\x02\x01\x01",
                                                                       7));
  const fs::path vectors = write("ok.json", kValidVectors);
  for (const fs::path& lib : {text, empty, truncated_elf, dir_}) {
    expectRejected({"fuzz", "--impl", lib.string(), "--seconds", "1"},
                   "unloadable library " + lib.filename().string() + " (fuzz)");
    expectRejected({"replay", vectors.string(), "--impl", lib.string()},
                   "unloadable library " + lib.filename().string() + " (replay)");
    expectRejected({"explain", vectors.string(), "--impl", lib.string()},
                   "unloadable library " + lib.filename().string() + " (explain)");
  }
  // A real shared library that lacks moe_route_v1.
  for (const char* libc :
       {"/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6"}) {
    if (fs::exists(libc)) {
      expectRejected({"fuzz", "--impl", libc, "--seconds", "1"}, "library without moe_route_v1");
      break;
    }
  }
}

// The loader behind replay/explain, driven through the fuzz_vectors target's standalone
// replay binary: every hostile file is just an input there, so the rule is "returns
// normally" (exit 0): a libFuzzer target that crashes or aborts on an input is a bug.
TEST_F(HostileInput, VectorLoaderTargetSurvivesEveryFile) {
#ifndef FUZZ_VECTORS_PATH
  GTEST_SKIP() << "no fuzz_vectors target in this build (fuzz/targets)";
#else
  std::vector<fs::path> files = {
      write("cut.json", kValidVectors.substr(0, kValidVectors.size() / 2)),
      write("deep.json", std::string(100000, '[') + std::string(100000, ']')),
      write("k-string.json", withRoutingTest(R"({"tcId": 1, "result": "valid", "k": "2",
        "logits": ["0x3f800000"]})")),
      write("giga.json", withReproducer(R"("tokens": 1048576, "experts": 1048576, "k": 1,
        "logits": ["0x3f800000"], "ids": [0], "gates": ["0x3f800000"])")),
      write("latin1.json", std::string("{\"a\": \"\xe9\xff\"}")),
      write("valid.json", kValidVectors)};
  for (const fs::path& f : files) {
    ProcessResult r = runProcess({FUZZ_VECTORS_PATH, f.string()});
    EXPECT_TRUE(r.exited && r.exit_code == 0)
        << "fuzz_vectors " << f.filename() << ": " << r.describe() << "\n"
        << r.output;
  }
#endif
}

TEST_F(HostileInput, BadUsage) {
  expectRejected({}, "no subcommand");
  expectRejected({"frobnicate"}, "unknown subcommand");
  expectRejected({"fuzz"}, "fuzz without --impl");
  expectRejected({"fuzz", "--impl", "scalar-probs", "--seconds", "-5"}, "negative seconds");
  expectRejected({"fuzz", "--impl", "scalar-probs", "--seed", "abc"}, "seed not a number");
  expectRejected({"fuzz", "--impl", "no-such-router", "--seconds", "1"}, "unknown router");
  expectRejected({"replay"}, "replay without files");
}

}  // namespace
