// A libFuzzer input on a moe_route_v2 library: routerCase decodes it to the
// routing family's case for that library (its contract's families and shapes), the same case
// in fuzz_external and in `moe-oracle reproduce`, whose reproducer `moe-oracle replay`
// replays to the same signature. A v1 router's input keeps the byte layout (decodeCase).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/contract.hpp"
#include "moe/fuzz/report.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/fuzz/router_case.hpp"
#include "moe/fuzz/verdict.hpp"
#include "run_oracle.hpp"

namespace moe::fuzz {
namespace {

const std::string kLib = std::string(MOE_LIB_DIR) + "/libmoe_broken_family_bias_in_gates.so";

std::vector<uint8_t> randomInput(uint64_t seed, size_t size) {
  SeededSource src(seed);
  std::vector<uint8_t> bytes(size);
  for (uint8_t& b : bytes) b = src.u8();
  return bytes;
}

// fuzz_external (the standalone replayer in a g++ build, libFuzzer's in a fuzz build) on one
// input file: whether it exited 0, and the signature lines ("moe-oracle: ...") it printed
// (the shell's and libFuzzer's own lines around the report are not the finding's).
struct TargetRun {
  bool exitedZero;
  std::vector<std::string> signatures;
};
TargetRun runFuzzExternal(const std::string& lib, const std::string& input) {
  const std::string cmd =
      "MOE_IMPL=" + lib + " " + std::string(MOE_FUZZ_EXTERNAL_BIN) + " " + input + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {false, {}};
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  const int status = pclose(p);
  TargetRun run{WIFEXITED(status) && WEXITSTATUS(status) == 0, {}};
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("moe-oracle: ", 0) == 0) run.signatures.push_back(line);
  }
  return run;
}

TEST(RouterCase, AV1RoutersInputKeepsTheByteLayout) {
  const Contract v1;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    const auto bytes = randomInput(seed, 400);
    const Case a = routerCase(bytes, v1, 64), b = decodeCase(bytes, 64);
    EXPECT_FALSE(a.family.has_value());
    EXPECT_EQ(a.experts, b.experts);
    EXPECT_EQ(a.k, b.k);
    EXPECT_EQ(a.tokens, b.tokens);
    ASSERT_EQ(a.logits.size(), b.logits.size());
    EXPECT_EQ(std::memcmp(a.logits.data(), b.logits.data(), a.logits.size() * sizeof(float)), 0);
  }
}

// A v2 contract's input is a family case inside what the contract lists: its families (on
// valid parameters; 1 case in 16 is outside the domain on purpose), its shapes, and the
// decoder's limits (E <= the cap, T <= 64, T * E <= 4096).
TEST(RouterCase, AV2RoutersInputIsAFamilyCaseWithinItsContract) {
  Contract softmaxOnly = parseContract(
      R"({"abi": "moe_route_v2", "families": {"scores": ["softmax"], "groups": false,
          "bias": false}, "shapes": {"experts": ["8-200"], "max_tokens": 5}})");
  Contract everything = parseContract(
      R"({"abi": "moe_route_v2", "families": {"scores": ["softmax", "sigmoid"],
          "groups": true, "bias": true}})");
  int sigmoid = 0, biased = 0, grouped = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    const auto bytes = randomInput(seed, 1500);
    const Case c = routerCase(bytes, softmaxOnly, 128);
    ASSERT_TRUE(c.family.has_value());
    EXPECT_GE(c.experts, 8);
    EXPECT_LE(c.experts, 128);
    EXPECT_GE(c.tokens, 1);
    EXPECT_LE(c.tokens, 5);
    EXPECT_EQ(c.logits.size(), static_cast<size_t>(c.tokens) * c.experts);
    if (familyInvalidReason(*c.family, c.experts).empty()) {
      EXPECT_EQ(c.family->score, ScoreFunction::kSoftmax);
      EXPECT_TRUE(c.family->bias.empty());
      EXPECT_EQ(c.family->groups, 1);
    }
    const Case d = routerCase(bytes, everything, kMaxExperts);
    ASSERT_TRUE(d.family.has_value());
    EXPECT_LE(d.logits.size(), static_cast<size_t>(kMaxLogits));
    EXPECT_LE(d.split, d.tokens);
    EXPECT_EQ(d.logits.size(), static_cast<size_t>(d.tokens) * d.experts);
    sigmoid += d.family->score == ScoreFunction::kSigmoid;
    biased += !d.family->bias.empty();
    grouped += d.family->groups > 1;
  }
  // The families the contract lists are drawn, not merely allowed.
  EXPECT_GT(sigmoid, 40);
  EXPECT_GT(biased, 40);
  EXPECT_GT(grouped, 40);
  // A contract whose shapes the decoder cannot reach is refused, not drawn outside them.
  Contract tooWide = parseContract(R"({"abi": "moe_route_v2", "shapes": {"experts": [4096]}})");
  EXPECT_THROW(inputShapeSpace(tooWide, kMaxExperts), std::invalid_argument);
}

// MOE_ABI, read once for fuzz_external and `reproduce`: unset is the library's own choice,
// the two ABIs' names are taken as they are, anything else is refused (exit 2 there).
TEST(RouterCase, MoeAbiChoosesALibrarysEntryPointForTheTargetAndReproduce) {
  const char* saved = std::getenv("MOE_ABI");
  const std::string restore = saved ? saved : "";
  unsetenv("MOE_ABI");
  EXPECT_EQ(abiFromEnv(), "");
  setenv("MOE_ABI", "moe_route_v1", 1);
  EXPECT_EQ(abiFromEnv(), kAbiV1);
  setenv("MOE_ABI", "moe_route_v2", 1);
  EXPECT_EQ(abiFromEnv(), kAbiV2);
  setenv("MOE_ABI", "v3", 1);
  EXPECT_THROW(abiFromEnv(), std::invalid_argument);
  if (saved) {
    setenv("MOE_ABI", restore.c_str(), 1);
  } else {
    unsetenv("MOE_ABI");
  }
  EXPECT_TRUE(isLibraryPath("lib/x.so"));
  EXPECT_TRUE(isLibraryPath("./x"));
  EXPECT_FALSE(isLibraryPath("avx512-probs"));
}

// The end to end path of a crash found on a v2 library: the input fuzz_external aborts on,
// `reproduce` turns into a reproducer with the same signature, and `replay` replays it.
TEST(ReproduceFamily, AFuzzExternalFindingOnAV2LibraryReproducesAndReplays) {
  ASSERT_TRUE(std::filesystem::exists(kLib)) << kLib;
  RouterOptions inProcess;
  inProcess.inProcess = true;
  const auto router = openRouter(kLib, inProcess);
  ASSERT_TRUE(router->contract().v2());

  // The first of a few seeded inputs on which the broken library violates.
  std::vector<uint8_t> input;
  Case c;
  std::string signature, kind;
  for (uint64_t seed = 1; seed <= 200 && signature.empty(); ++seed) {
    input = randomInput(seed, 1000);
    c = routerCase(input, router->contract(), kMaxExperts);
    ASSERT_TRUE(c.family.has_value()) << "seed " << seed << ": decoded as a v1 case";
    Judge judge;
    const CaseResult r = judge.run(*router, c);
    if (r.violation) {
      signature =
          signatureLine(router->name(), r.violation->kind, r.violation->tag, degenerateShape(c));
      kind = kindName(r.violation->kind);
    }
  }
  ASSERT_FALSE(signature.empty()) << "no input of 200 made bias-in-gates violate";

  const std::string dir = testing::freshDir("reproduce-family");
  std::filesystem::create_directories(dir);
  const std::string inputPath = dir + "/crash-input";
  std::ofstream(inputPath, std::ios::binary)
      .write(reinterpret_cast<const char*>(input.data()),
             static_cast<std::streamsize>(input.size()));

  // fuzz_external finds it: the report's last line is the signature.
  const TargetRun target = runFuzzExternal(kLib, inputPath);
  EXPECT_FALSE(target.exitedZero);
  EXPECT_EQ(target.signatures, std::vector<std::string>{signature});

  // reproduce writes the reproducer, of the family case, with that signature.
  const std::string out = dir + "/out";
  const auto rep =
      testing::runOracle("reproduce --out " + out + " --impl " + kLib + " " + inputPath);
  ASSERT_EQ(rep.exitCode, 0) << rep.out;
  ASSERT_EQ(rep.out.rfind("reproducer: ", 0), 0u) << rep.out;
  const std::string path = rep.out.substr(12, rep.out.find('\n') - 12);
  EXPECT_NE(rep.out.find(signature + "\n"), std::string::npos) << rep.out;
  nlohmann::json file;
  std::ifstream(path) >> file;
  const nlohmann::json& test = file["testGroups"][0]["tests"][0];
  EXPECT_EQ(test["signature"], signature);
  EXPECT_EQ(test["kind"], kind);
  ASSERT_TRUE(test.contains("family")) << test.dump();
  EXPECT_EQ(familyFromJSON(test["family"], c.experts), *c.family);
  EXPECT_EQ(test["experts"], c.experts);
  EXPECT_EQ(test["tokens"], c.tokens);

  // replay: the recorded output is still that violation (exit 0), and the library rerun on
  // the case violates again with the same kind (exit 1).
  EXPECT_EQ(testing::runOracle("replay " + path).exitCode, 0);
  const auto again = testing::runOracle("replay --json " + path + " --impl " + kLib);
  EXPECT_EQ(again.exitCode, 1) << again.out;
  const nlohmann::json j = nlohmann::json::parse(again.out);
  ASSERT_EQ(j["files"][0]["failures"].size(), 1u) << again.out;
  EXPECT_EQ(j["files"][0]["failures"][0]["kind"], kind) << again.out;
}

}  // namespace
}  // namespace moe::fuzz
