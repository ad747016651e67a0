// A finding ready to send upstream, through the real command: `explain --as python` is a
// program that runs with torch alone and holds the reproducer's values bit for bit, and
// `explain --as c` compiles as C99 (against route_abi.h for a family) and prints them.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "run_oracle.hpp"

namespace moe::fuzz {
namespace {

using testing::freshDir;
using testing::readJsonFile;
using testing::runOracle;
using testing::RunResult;

const char* const kPython = "/usr/bin/python3";

RunResult shell(const std::string& cmd) {
  return testing::runShell(cmd + " 2>&1");
}

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

bool torchAvailable() {
  return shell(std::string(kPython) + " -c 'import torch'").exitCode == 0;
}

// Runs each snippet of a `--as python` output on its own (split where the writer separates
// them) and prints, per snippet, the outcome and every tensor's binary32 bits, read back from
// the snippet's own variables.
const char* const kRunner = R"PY(import re, sys, torch
src = open(sys.argv[1]).read()
for chunk in re.split(r"\n\n\n(?=# ---- snippet)", src):
    ns = {}
    try:
        exec(compile(chunk, "snippet", "exec"), ns)
        print("OUTCOME ran")
    except AssertionError as e:
        print("OUTCOME assert", str(e))
    for name in ("logits", "bias", "got_gates"):
        t = ns.get(name)
        if isinstance(t, torch.Tensor):
            bits = t.contiguous().view(torch.int32).flatten().tolist()
            print(name.upper(), " ".join(f"0x{b & 0xffffffff:08x}" for b in bits))
    for name in ("got_ids", "expected_ids"):
        v = ns.get(name)
        if isinstance(v, torch.Tensor):
            v = v.flatten().tolist()
        if v is not None:
            print(name.upper(), " ".join(str(i) for i in v))
    if isinstance(ns.get("expected_gates"), list):
        print("EXPECTED_GATES", " ".join(g.hex() for g in ns["expected_gates"]))
    if "family" in ns:
        f = ns["family"]
        print("FAMILY", f["score"], f["groups"], f["topk_groups"], f["group_score"],
              f["renormalize"], f"0x{torch.tensor([f['scale']]).view(torch.int32).item() & 0xffffffff:08x}")
)PY";

// Lines "KEY rest" of the runner's output, in order, per key.
std::vector<std::string> linesOf(const std::string& out, const std::string& key) {
  std::vector<std::string> found;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + " ", 0) == 0) found.push_back(line.substr(key.size() + 1));
    if (line == key) found.push_back("");
  }
  return found;
}

std::string joined(const nlohmann::json& list) {
  std::string s;
  for (const auto& v : list) {
    if (!s.empty()) s += " ";
    s += v.is_string() ? v.get<std::string>() : v.dump();
  }
  return s;
}

// The one reproducer a fuzz run wrote into `dir`.
std::string onlyReproducer(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  }
  EXPECT_EQ(files.size(), 1u) << dir;
  return files.empty() ? std::string() : files.front();
}

// `explain --as python FILE` written to FILE.py and run by the runner.
RunResult runPythonSnippet(const std::string& reproducer) {
  const auto snippet = runOracle("explain --as python " + reproducer);
  EXPECT_EQ(snippet.exitCode, 0) << snippet.out;
  EXPECT_NE(snippet.out.find("import torch"), std::string::npos) << snippet.out;
  writeFile(reproducer + ".py", snippet.out);
  const std::string runner = reproducer + ".runner.py";
  writeFile(runner, kRunner);
  return shell(std::string(kPython) + " " + runner + " " + reproducer + ".py");
}

// The tie-high peer library, judged with ties to the lower index: a tie-higher-index
// finding, whose snippet shows the spec's lower-index expert against the router's.
TEST(Snippet, PythonSnippetOfATieFindingRunsAndHoldsTheReproducerBitForBit) {
  if (!torchAvailable()) GTEST_SKIP() << kPython << " has no torch (Debian: python3-torch)";
  const std::string dir = freshDir("snippet-tie");
  const auto fuzz = runOracle(
      "fuzz --seconds 3 --seed 4 --experts 2-16 --tokens 1-4 --tie-order lowest-index "
      "--shrink-seconds 1 --impl " +
      std::string(MOE_LIB_DIR) + "/libmoe_peer_tie_high_any.so --out " + dir);
  ASSERT_EQ(fuzz.exitCode, 1) << fuzz.out;
  const std::string file = onlyReproducer(dir);
  const auto t = readJsonFile(file)["testGroups"][0]["tests"][0];
  ASSERT_EQ(t["kind"], "tie-higher-index");

  const auto run = runPythonSnippet(file);
  ASSERT_EQ(run.exitCode, 0) << run.out;
  ASSERT_EQ(linesOf(run.out, "OUTCOME").size(), 1u) << run.out;
  // The final assert fails on the router's answer, naming the kind and the certificate.
  EXPECT_EQ(linesOf(run.out, "OUTCOME")[0],
            "assert moe-oracle: tie-higher-index: " + t["certificate"].get<std::string>());
  EXPECT_EQ(linesOf(run.out, "LOGITS"), std::vector<std::string>{joined(t["logits"])});
  EXPECT_EQ(linesOf(run.out, "GOT_GATES"), std::vector<std::string>{joined(t["gates"])});
  EXPECT_EQ(linesOf(run.out, "GOT_IDS"), std::vector<std::string>{joined(t["ids"])});
  // The spec keeps the tied experts by index: its ids differ from the router's, and the
  // explanation's spec column agrees with the snippet.
  const auto expected = linesOf(run.out, "EXPECTED_IDS");
  ASSERT_EQ(expected.size(), 1u) << run.out;
  EXPECT_NE(expected[0].substr(0, joined(t["ids"]).size()), joined(t["ids"])) << run.out;
  // What the snippet prints when run as a script: both answers, for a bug report.
  const auto script = shell(std::string(kPython) + " " + file + ".py");
  EXPECT_EQ(script.exitCode, 1) << script.out;
  EXPECT_NE(script.out.find("expected ids   [" + expected[0].substr(0, 1)), std::string::npos)
      << script.out;
  EXPECT_NE(script.out.find("AssertionError: moe-oracle: tie-higher-index"), std::string::npos)
      << script.out;
}

// Values only a hex float and the NaN fix-up spell exactly: subnormals, -0, ±inf, FLT_MAX,
// NaNs with a payload and a sign; several tests in one file, one of them a crash on an
// empty batch (no output: the snippet gives the case and what happened).
TEST(Snippet, EveryBinary32AndEveryTestOfTheFileComeThrough) {
  if (!torchAvailable()) GTEST_SKIP() << kPython << " has no torch (Debian: python3-torch)";
  const std::string dir = freshDir("snippet-bits");
  std::filesystem::create_directories(dir);
  const nlohmann::json contract = {{"abi", "moe_route_v1"}, {"slot_order", "rank"}};
  nlohmann::json tie = {
      {"tcId", 1},
      {"tokens", 2},
      {"experts", 6},
      {"k", 3},
      {"split", 1},
      {"threads", 1},
      {"variant", 0},
      {"allowNaN", true},
      {"contract", contract},
      {"impl", "hand-made"},
      {"kind", "tie-higher-index"},
      {"token", 0},
      {"logits",
       {"0x00000001", "0xff800000", "0x3f800000", "0x3f800000", "0x80000000", "0x7f7fffff",
        "0x807fffff", "0x7fc00001", "0x3f800000", "0x7f800000", "0x80000000", "0xffc00000"}},
      {"ids", {5, 3, 2, 0, 1, 2}},
      {"gates",
       {"0x3f800000", "0x00000000", "0x80000000", "0x7fc00000", "0x7f800000", "0x00000001"}}};
  nlohmann::json crash = {{"tcId", 2},
                          {"tokens", 0},
                          {"experts", 13},
                          {"k", 3},
                          {"split", 0},
                          {"threads", 1},
                          {"variant", 0},
                          {"logits", nlohmann::json::array()},
                          {"impl", "hand-made"},
                          {"kind", "crash"},
                          {"certificate", "SIGSEGV */ in \"the\" call's\nsecond line"}};
  const nlohmann::json file = {
      {"testGroups",
       {{{"type", "RoutingTest"}, {"tests", {{{"tcId", 9}, {"k", 1}, {"logits", {"0x3f800000"}}}}}},
        {{"type", "RouterReproducer"}, {"tests", {tie, crash}}}}}};
  const std::string path = dir + "/hand.json";
  writeFile(path, file.dump(1));

  const auto run = runPythonSnippet(path);
  ASSERT_EQ(run.exitCode, 0) << run.out;
  const auto outcomes = linesOf(run.out, "OUTCOME");
  ASSERT_EQ(outcomes.size(), 2u) << run.out;
  EXPECT_EQ(outcomes[0].rfind("assert moe-oracle: tie-higher-index: ", 0), 0u) << outcomes[0];
  EXPECT_EQ(outcomes[1], "ran");
  const auto logits = linesOf(run.out, "LOGITS");
  ASSERT_EQ(logits.size(), 2u) << run.out;
  EXPECT_EQ(logits[0], joined(tie["logits"]));
  EXPECT_EQ(logits[1], "");
  EXPECT_EQ(linesOf(run.out, "GOT_GATES"), std::vector<std::string>{joined(tie["gates"])});
  // Token 0 of the spec: FLT_MAX first, then the tied 1s by index; gates 1, 0, 0 exactly.
  EXPECT_EQ(linesOf(run.out, "EXPECTED_IDS"), std::vector<std::string>{"5 2 3"});
  EXPECT_EQ(linesOf(run.out, "EXPECTED_GATES"),
            std::vector<std::string>{"0x1.0000000000000p+0 0x0.0p+0 0x0.0p+0"});
  const auto crashRun =
      shell(std::string(kPython) + " -c \"$(sed -n '/snippet 2 of 2/,$p' " + path + ".py)\"");
  EXPECT_EQ(crashRun.exitCode, 0) << crashRun.out;
  EXPECT_NE(crashRun.out.find("crash of hand-made on this case: SIGSEGV */ in \"the\" call's "
                              "second line"),
            std::string::npos)
      << crashRun.out;

  // The same file as C: one translation unit, both findings, compiles warning-free as C99.
  const auto c = runOracle("explain --as c " + path);
  ASSERT_EQ(c.exitCode, 0) << c.out;
  writeFile(path + ".c", c.out);
  const auto cc = shell(std::string(MOE_C_COMPILER) + " -std=c99 -pedantic -Wall -Wextra -Werror " +
                        path + ".c -o " + path + ".bin");
  ASSERT_EQ(cc.exitCode, 0) << cc.out << c.out;
  const auto bin = shell(path + ".bin");
  EXPECT_EQ(bin.exitCode, 1) << bin.out;
  EXPECT_NE(bin.out.find("logits of token 0: 0x1p-149 -inf 0x1p+0 0x1p+0 -0x0p+0 "
                         "0x1.fffffep+127\n"),
            std::string::npos)
      << bin.out;
  EXPECT_NE(bin.out.find("slot 1: expected id 2 gate 0x0p+0, got id 3 gate 0x0p+0"),
            std::string::npos)
      << bin.out;
  EXPECT_NE(bin.out.find("no recorded output: SIGSEGV */ in \"the\" call's second line"),
            std::string::npos)
      << bin.out;
}

// A moe_route_v2 library that adds the bias to the gates: the family's parameters travel in
// both snippets, the C one as a moe_route_params_v2 initializer compiled against route_abi.h.
TEST(Snippet, FamilyFindingAsPythonAndAsC) {
  const std::string dir = freshDir("snippet-family");
  const auto fuzz = runOracle(
      // Seed 1's first finding is gate-bias; on others (2 and 7 of 1..8) a negative bias
      // first makes a negative gate (gate-nonfinite), a finding of the same bug this test
      // does not need. Which comes first is the draw's: a new draw may need another seed.
      "fuzz --seconds 5 --seed 1 --experts 2-16 --tokens 1-3 "
      "--shrink-seconds 1 --impl " +
      std::string(MOE_LIB_DIR) + "/libmoe_broken_family_bias_in_gates.so --out " + dir);
  ASSERT_EQ(fuzz.exitCode, 1) << fuzz.out;
  const std::string file = onlyReproducer(dir);
  const auto t = readJsonFile(file)["testGroups"][0]["tests"][0];
  ASSERT_EQ(t["kind"], "gate-bias");
  const auto& fam = t["family"];

  const auto c = runOracle("explain --as c " + file);
  ASSERT_EQ(c.exitCode, 0) << c.out;
  EXPECT_NE(c.out.find("#include \"moe/route_abi.h\""), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("static const moe_route_params_v2 params = {"), std::string::npos) << c.out;
  writeFile(file + ".c", c.out);
  const auto cc =
      shell(std::string(MOE_C_COMPILER) + " -std=c99 -pedantic -Wall -Wextra -Werror -I" +
            MOE_IMPL_INCLUDE + " " + file + ".c -o " + file + ".bin");
  ASSERT_EQ(cc.exitCode, 0) << cc.out << c.out;
  const auto bin = shell(file + ".bin");
  EXPECT_EQ(bin.exitCode, 1) << bin.out;
  // The program's own %a of its arrays reads back as the reproducer's bits.
  const auto hexBits = [](const std::string& words) {
    std::istringstream in(words);
    std::string out;
    for (std::string w; in >> w;) {
      const float x = static_cast<float>(std::strtod(w.c_str(), nullptr));
      uint32_t b = 0;
      std::memcpy(&b, &x, sizeof b);
      char buf[16];
      std::snprintf(buf, sizeof buf, "0x%08x", b);
      out += (out.empty() ? "" : " ") + std::string(buf);
    }
    return out;
  };
  // "logits of token N: ..." for the token the snippet tells.
  const auto logitsLines = linesOf(bin.out, "logits of token");
  ASSERT_EQ(logitsLines.size(), 1u) << bin.out;
  const std::ptrdiff_t E = t["experts"].get<int>();
  const std::ptrdiff_t token = std::stoi(logitsLines[0]);
  ASSERT_TRUE(token >= 0 && token < t["tokens"].get<int>()) << bin.out;
  const std::string shown = logitsLines[0].substr(logitsLines[0].find(": ") + 2);
  std::vector<std::string> row(t["logits"].begin() + token * E,
                               t["logits"].begin() + (token + 1) * E);
  EXPECT_EQ(hexBits(shown), joined(row)) << bin.out;
  const auto familyLines = linesOf(bin.out, "family:");
  ASSERT_EQ(familyLines.size(), 1u) << bin.out;
  const std::string biasText = familyLines[0].substr(familyLines[0].find(", bias ") + 7);
  EXPECT_EQ(fam.contains("bias") ? hexBits(biasText) : biasText,
            fam.contains("bias") ? joined(fam["bias"]) : "NULL")
      << bin.out;

  if (!torchAvailable()) GTEST_SKIP() << kPython << " has no torch (Debian: python3-torch)";
  const auto run = runPythonSnippet(file);
  ASSERT_EQ(run.exitCode, 0) << run.out;
  ASSERT_EQ(linesOf(run.out, "OUTCOME").size(), 1u) << run.out;
  EXPECT_EQ(linesOf(run.out, "OUTCOME")[0].rfind("assert moe-oracle: gate-bias: ", 0), 0u)
      << run.out;
  EXPECT_EQ(linesOf(run.out, "LOGITS"), std::vector<std::string>{joined(t["logits"])});
  EXPECT_EQ(linesOf(run.out, "GOT_GATES"), std::vector<std::string>{joined(t["gates"])});
  if (fam.contains("bias")) {
    EXPECT_EQ(linesOf(run.out, "BIAS"), std::vector<std::string>{joined(fam["bias"])});
  }
  const auto family = linesOf(run.out, "FAMILY");
  ASSERT_EQ(family.size(), 1u) << run.out;
  const std::string expected =
      std::string(fam["score"] == 1 ? "sigmoid" : "softmax") + " " + fam["groups"].dump() + " " +
      fam["topk_groups"].dump() + " " + (fam["group_score"] == 1 ? "top2_sum" : "max") + " " +
      (fam["renormalize"] == 1 ? "True" : "False") + " " + fam["scale"].get<std::string>();
  EXPECT_EQ(family[0], expected) << run.out;
}

}  // namespace
}  // namespace moe::fuzz
