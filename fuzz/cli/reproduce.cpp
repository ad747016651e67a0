// `moe-oracle reproduce` (was moe-crash-reproducer): turns a libFuzzer input of a routing
// target (fuzz_route, fuzz_gates, fuzz_external) into golden-vector reproducers, through the
// code moe-oracle itself uses: the input's case for each router as the targets decode it
// (routerCase: the byte layout for a moe_route_v1 router, the family's draw for a
// moe_route_v2 library), the verdict (judgeCase) and the reproducer writer (reproducerFile).
// The campaign runner calls it on each minimised crash, so a crash found by libFuzzer
// replays with `moe-oracle replay FILE.json` like any other violation.
//
// usage: moe-oracle reproduce --out DIR [--impl NAME|PATH.so]... [--abi ABI] [--signature LINE]
//        INPUT
// Each router (default: every built-in router this CPU has) is judged on the decoded case;
// for each violation a reproducer is written to DIR and "reproducer: PATH" plus the
// signature line are printed. With --signature only the violation with that signature is
// kept. Exit 0: at least one reproducer written; 1: no router violates on this input;
// 2: bad usage, unreadable input, or a router that cannot be loaded.
#include "reproduce.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/report.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/fuzz/router_case.hpp"
#include "moe/fuzz/verdict.hpp"

namespace {

using namespace moe::fuzz;

std::vector<uint8_t> readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("cannot read {}", path));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Judges the case on one router; writes a reproducer when it violates. Returns the path.
std::optional<std::string> reproduceOn(const Router& router, const Case& c,
                                       const std::string& input, const std::string& outDir,
                                       const std::string& wantSignature) {
  Judge judge;
  CaseResult result = judge.run(router, c);
  if (result.abstained || !result.violation) return std::nullopt;
  // With the tag, as the report's last line (a v2 `bad-status` is tagged `status-6`), so
  // that --signature matches what fuzz_external printed.
  std::string signature = signatureLine(router.name(), result.violation->kind,
                                        result.violation->tag, degenerateShape(c));
  if (!wantSignature.empty() && signature != wantSignature) return std::nullopt;
  nlohmann::json provenance = {{"tool", "moe-oracle reproduce"},
                               {"input", std::filesystem::path(input).filename().string()},
                               {"impl", router.name()}};
  std::filesystem::create_directories(outDir);
  std::filesystem::path path = std::filesystem::path(outDir) /
                               (safeFileStem(signature.substr(signature.find(' ') + 1)) + ".json");
  std::ofstream out(path);
  out << reproducerFile(router, c, result, provenance,
                        verdictConfigJSON(judge.config(), router.contract()))
             .dump(2)
      << "\n";
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path.string()));
  std::printf("reproducer: %s\n%s\n", path.c_str(), signature.c_str());
  return path.string();
}

}  // namespace

namespace moe::fuzz {

CLI::App* addReproduce(CLI::App& app, ReproduceFlags& f) {
  auto* cmd =
      app.add_subcommand("reproduce",
                         "a libFuzzer routing input -> golden-vector reproducers (exit 0: written, "
                         "1: no router violates, 2: usage or unreadable input)");
  // The targets cap E by MOE_FUZZ_MAX_EXPERTS (throughput runs); decoding must match.
  f.maxExperts = maxExpertsFromEnv();
  cmd->add_option("--out", f.outDir, "folder for the reproducers")->required();
  cmd->add_option("--max-experts", f.maxExperts,
                  "the decoder's cap on E (default: $MOE_FUZZ_MAX_EXPERTS, else the generator's)")
      ->check(CLI::Range(1, kMaxExperts));
  cmd->add_option("--impl", f.impls, "router name or .so (default: every available built-in)");
  cmd->add_option("--abi", f.abi,
                  "a library's entry point: moe_route_v1 or moe_route_v2 (default: $MOE_ABI as "
                  "fuzz_external reads it, else moe_route_v2 when the library exports it)")
      ->check(CLI::IsMember({std::string(kAbiV1), std::string(kAbiV2)}));
  cmd->add_option("--signature", f.signature, "keep only the violation with this signature line");
  cmd->add_option("input", f.input, "the libFuzzer input file")->required();
  return cmd;
}

int runReproduce(const ReproduceFlags& f) {
  try {
    const std::vector<uint8_t> input = readBytes(f.input);
    std::vector<std::string> impls = f.impls;
    if (impls.empty()) {
      for (const auto& name : builtinRouterNames()) {
        if (builtinRouterAvailable(name)) impls.push_back(name);
      }
    }
    // Only a library's entry point is chosen: the built-in routers of fuzz_route are v1.
    const std::string libraryAbi = f.abi.empty() ? abiFromEnv() : f.abi;
    int written = 0;
    for (const auto& impl : impls) {
      RouterOptions options;
      options.abi = isLibraryPath(impl) ? libraryAbi : "";
      auto router = openRouter(impl, options);
      // Decoded per router, as the target decoded it for that router: a moe_route_v2
      // library gets the family's case (fuzz_external), a v1 router the top-k case.
      const Case c = routerCase(input, router->contract(), f.maxExperts);
      if (reproduceOn(*router, c, f.input, f.outDir, f.signature)) ++written;
    }
    if (written == 0) {
      std::fprintf(stderr, "moe-oracle reproduce: no router violates on %s\n", f.input.c_str());
    }
    return written > 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moe-oracle reproduce: %s\n", e.what());
    return 2;
  }
}

}  // namespace moe::fuzz
