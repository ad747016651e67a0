// moe-oracle: fuzz / replay / explain (docs/fuzz.md). Exit codes: 0 = no violation,
// 1 = a violation or a failed replay, 2 = bad usage or a router that cannot be loaded.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <random>

#include "moe/fuzz/campaign.hpp"
#include "moe/fuzz/guarded_main.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/fuzz/vectors.hpp"

namespace {

using namespace moe::fuzz;

void addBudgetFlags(CLI::App* cmd, VerdictConfig& config, double& factor, double& ulp,
                    bool& noFloor) {
  cmd->add_option("--gate-factor", factor,
                  "gate budget: multiple of the binary32 spec's own gate error (overrides the "
                  "contract's spec32_factor)");
  cmd->add_option("--gate-ulp", ulp,
                  "gate budget: extra ulps of the exact gate (overrides "
                  "the contract's ulp)");
  cmd->add_flag("--no-analytic-floor", noFloor,
                "drop the derived first-order gate bound from the budget (docs/fuzz.md)");
  (void)config;
}

void applyBudgetFlags(VerdictConfig& config, double factor, double ulp, bool noFloor) {
  if (factor >= 0) config.gateFactor = factor;
  if (ulp >= 0) config.gateUlp = ulp;
  config.analyticFloor = !noFloor;
}

int runFuzz(const std::string& impl, double seconds, uint64_t seed, bool seedGiven,
            const std::string& out, bool json, const VerdictConfig& config) {
  std::unique_ptr<Router> router;
  try {
    router = openRouter(impl);
  } catch (const RouterLoadError& e) {
    std::fprintf(stderr, "moe-oracle fuzz: %s\n", e.what());
    return 2;
  }
  if (!seedGiven) seed = std::random_device{}();
  CampaignOptions options;
  options.seconds = seconds;
  options.seed = seed;
  options.outDir = out;
  options.config = config;
  options.progress = true;
  std::fprintf(stderr, "moe-oracle fuzz %s: seed %llu, %.0f s; contract %s\n",
               router->name().c_str(), static_cast<unsigned long long>(seed), seconds,
               contractToJSON(router->contract()).c_str());
  CampaignSummary s = runCampaign(*router, options);
  if (!s.violations.empty()) std::fputs(s.violations[0].report.c_str(), stderr);
  std::fputs(summaryText(s).c_str(), stderr);
  if (s.cases > 0 && s.abstained == s.cases) {
    std::fprintf(stderr, "moe-oracle fuzz: warning: %s abstained on every case\n",
                 router->name().c_str());
  }
  if (json) {
    std::cout << summaryJSON(s).dump() << "\n";
  } else if (!s.violations.empty()) {
    std::cout << "reproducer: " << s.violations[0].reproducer << "\n"
              << s.violations[0].signature << "\n";
  }
  return s.violations.empty() ? 0 : 1;
}

std::unique_ptr<Router> openOptional(const std::string& impl, const char* cmd, bool& failed) {
  failed = false;
  if (impl.empty()) return nullptr;
  try {
    return openRouter(impl);
  } catch (const RouterLoadError& e) {
    std::fprintf(stderr, "moe-oracle %s: %s\n", cmd, e.what());
    failed = true;
    return nullptr;
  }
}

int runReplay(const std::vector<std::string>& files, const std::string& impl, bool json,
              const VerdictConfig& config) {
  bool failed;
  auto router = openOptional(impl, "replay", failed);
  if (failed) return 2;
  // Exit 2 when any file or test cannot be read (bad input), else 1 when a test fails.
  int totalFailed = 0, totalPassed = 0, totalSkipped = 0, unreadable = 0;
  nlohmann::json report = nlohmann::json::array();
  for (const auto& path : files) {
    try {
      nlohmann::json file = loadVectorFile(path);
      ReplaySummary s = replayVectors(file, router.get(), config);
      for (const auto& line : s.lines) std::fprintf(stderr, "%s: %s\n", path.c_str(), line.c_str());
      std::fprintf(stderr, "%s: %d passed, %d failed, %d skipped\n", path.c_str(), s.passed,
                   s.failed, s.skipped);
      totalFailed += s.failed;
      unreadable += s.malformed;
      totalPassed += s.passed;
      totalSkipped += s.skipped;
      report.push_back({{"file", path},
                        {"passed", s.passed},
                        {"failed", s.failed},
                        {"skipped", s.skipped},
                        {"messages", s.lines}});
    } catch (const std::exception& e) {
      std::fprintf(stderr, "moe-oracle replay: %s\n", e.what());
      ++totalFailed;
      ++unreadable;
      report.push_back({{"file", path}, {"error", e.what()}});
    }
  }
  if (json) {
    std::cout << nlohmann::json{{"passed", totalPassed},
                                {"failed", totalFailed},
                                {"skipped", totalSkipped},
                                {"unreadable", unreadable},
                                {"files", report}}
                     .dump()
              << "\n";
  }
  if (unreadable > 0) return 2;
  return totalFailed > 0 ? 1 : 0;
}

int runExplain(const std::string& path, const std::string& impl, const VerdictConfig& config) {
  bool failed;
  auto router = openOptional(impl, "explain", failed);
  if (failed) return 2;
  try {
    int unexplained = 0;
    std::cout << explainVectors(loadVectorFile(path), router.get(), config, &unexplained);
    if (unexplained > 0) {
      std::fprintf(stderr, "moe-oracle explain: %s: %d test(s) could not be read\n", path.c_str(),
                   unexplained);
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moe-oracle explain: %s\n", e.what());
    return 2;
  }
  return 0;
}

}  // namespace

namespace {

int runMain(int argc, char** argv) {
  CLI::App app{
      "moe-oracle: a differential fuzzer for Mixture-of-Experts top-k routing, judged "
      "against a verified reference (exit 0: no violation, 1: violation, 2: usage)"};
  app.require_subcommand(1);
  VerdictConfig config;
  double gateFactor = -1, gateUlp = -1;
  bool noFloor = false;

  std::string impl, out = "moe-oracle-out";
  double seconds = 10;
  uint64_t seed = 0;
  bool json = false;
  auto* fuzz = app.add_subcommand("fuzz",
                                  "fuzz a router against the oracle; on the first "
                                  "violation write a reproducer and exit 1");
  fuzz->add_option("--impl", impl,
                   "built-in router name (e.g. scalar-probs), spec32, or a path "
                   "to a shared library exporting moe_route_v1")
      ->required();
  fuzz->add_option("--seconds", seconds, "time limit (default 10)")->check(CLI::PositiveNumber);
  auto* seedOpt = fuzz->add_option("--seed", seed,
                                   "seed of the case stream (default: random, "
                                   "printed)");
  fuzz->add_option("--out", out, "where reproducers go (default ./moe-oracle-out)");
  fuzz->add_flag("--json", json, "print one JSON summary object on stdout");
  addBudgetFlags(fuzz, config, gateFactor, gateUlp, noFloor);

  std::vector<std::string> files;
  std::string replayImpl;
  bool replayJson = false;
  auto* replay = app.add_subcommand("replay",
                                    "replay golden vectors and reproducers; exit 1 on a "
                                    "failing test, 2 on input that cannot be read");
  replay->add_option("files", files, "vector files (JSON)")->required()->check(CLI::ExistingFile);
  replay->add_option("--impl", replayImpl, "also run this router (name or .so) on every test");
  replay->add_flag("--json", replayJson, "print a JSON summary on stdout");
  addBudgetFlags(replay, config, gateFactor, gateUlp, noFloor);

  std::string explainFile, explainImpl;
  auto* explain = app.add_subcommand("explain", "tell one vector file's cases for a person");
  explain->add_option("file", explainFile, "vector file (JSON)")
      ->required()
      ->check(CLI::ExistingFile);
  explain->add_option("--impl", explainImpl,
                      "router to explain (default: the recorded output, "
                      "or spec32 for RoutingTest)");
  addBudgetFlags(explain, config, gateFactor, gateUlp, noFloor);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  applyBudgetFlags(config, gateFactor, gateUlp, noFloor);
  if (*fuzz) return runFuzz(impl, seconds, seed, seedOpt->count() > 0, out, json, config);
  if (*replay) return runReplay(files, replayImpl, replayJson, config);
  if (*explain) return runExplain(explainFile, explainImpl, config);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  return moe::fuzz::guardedMain("moe-oracle", runMain, argc, argv);
}
