// Tokens judged per second beside the kernel's own speed, on the same cases in the same run:
// T = 4,096 tokens drawn by the fuzzer's own draw (routerCase, the default of `moe-oracle
// fuzz` at that shape; and again with the logits replaced by N(0, 2) draws, rows as a
// model's, the "_gauss" rows), routed once by the best router this CPU has (avx512, else avx2,
// else scalar; logits mode), then judged by fuzz::judgeRecorded on one core and with
// --jobs 2. Rows: E = 64 k = 8, E = 256 k = 8, E = 8 k = 2 (moe_route_v1) and DeepSeek-V3's
// family (moe_route_v2: sigmoid, bias, 8 groups, top 4 by top-2 sum, E = 256, k = 8).
// Counters: tokens_per_s (per CPU-second of the benchmark's thread on one core, so that a
// loaded machine does not blur the ratio; per wall-clock second with --jobs 2), and
// first_level (the share of tokens the first level decided).
// At the end a table gives judge / kernel per row against the target of 1/10 on one core.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/fuzz/router_case.hpp"
#include "moe/fuzz/verdict.hpp"
#include "moe/route_abi.h"
#include "moe/routers.hpp"
#include "ratio_reporter.hpp"

namespace moe::bench {
namespace {

using fuzz::Case;
using fuzz::Router;

constexpr int32_t kTokens = 4096;
constexpr int kCases = 4;

struct Row {
  const char* name;
  int32_t experts, k;
  const char* recipe;  // moe_route_v2's model recipe, or nullptr for moe_route_v1
  bool gaussian;       // logits N(0, 2) as a model's (bench_routers' rows), else the fuzzer's draw
};

constexpr Row kRows[] = {{"E64_k8", 64, 8, nullptr, false},
                         {"E256_k8", 256, 8, nullptr, false},
                         {"deepseek_v3", 256, 8, "deepseek-v3", false},
                         {"E8_k2", 8, 2, nullptr, false},
                         {"E64_k8_gauss", 64, 8, nullptr, true},
                         {"E256_k8_gauss", 256, 8, nullptr, true},
                         {"deepseek_v3_gauss", 256, 8, "deepseek-v3", true},
                         {"E8_k2_gauss", 8, 2, nullptr, true}};

std::string bestRouterName() {
  for (const char* name : {"avx512-logits", "avx2-logits", "scalar-logits"}) {
    if (fuzz::builtinRouterAvailable(name)) return name;
  }
  return "scalar-logits";
}

// A row's router, its contract (the recipe's families for v2), its cases and their outputs.
struct Prepared {
  std::unique_ptr<Router> router;
  fuzz::Contract contract;
  std::vector<Case> cases;
  std::vector<fuzz::RouteOutput> outputs;
};

const Prepared& prepared(const Row& row) {
  static std::map<std::string, Prepared> cache;
  Prepared& p = cache[row.name];
  if (p.router) return p;
  fuzz::RouterOptions options;
  if (row.recipe) options.abi = std::string(fuzz::kAbiV2);
  p.router = fuzz::openRouter(bestRouterName(), options);
  p.contract = p.router->contract();
  if (row.recipe) p.contract.families = fuzz::familiesOfRecipes(row.recipe, "recipe");
  fuzz::ShapeSpace shapes;
  shapes.experts = fuzz::IntSet::ofValues({row.experts});
  shapes.k = fuzz::IntSet::ofValues({row.k});
  shapes.tokens = fuzz::IntSet::ofValues({kTokens});
  shapes.tokensGiven = true;
  fuzz::SeededSource source(20261206);
  std::mt19937 rng(20261206);
  while (static_cast<int>(p.cases.size()) < kCases) {
    Case c = fuzz::routerCase(source, p.contract, shapes);
    if (c.family && !fuzz::familyInvalidReason(*c.family, c.experts).empty()) continue;
    c.threads = 1;
    if (row.gaussian) {
      std::normal_distribution<float> logit(0.0f, 2.0f);
      for (float& v : c.logits) v = logit(rng);
    }
    fuzz::RouteOutput out =
        p.router->route(c.tokens, c.experts, c.k, c.logits, 1, c.family ? &*c.family : nullptr);
    if (out.fault || out.abstained) continue;
    p.cases.push_back(std::move(c));
    p.outputs.push_back(std::move(out));
  }
  return p;
}

void tokensPerSecond(benchmark::State& state, uint64_t tokens) {
  state.counters["tokens_per_s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}

// The kernel itself, through its C ABI entry (impl/'s RouteFn / RouteV2Fn), on one thread,
// into buffers allocated once: the speed a model sees, not the adapter's.
void kernel(benchmark::State& state, const Row& row) {
  const Prepared& p = prepared(row);
  const moe::BuiltinRouter* r = moe::findRouter(bestRouterName());
  std::vector<int32_t> ids(static_cast<size_t>(kTokens) * row.k);
  std::vector<float> gates(ids.size());
  uint64_t tokens = 0;
  for (auto _ : state) {
    for (const Case& c : p.cases) {
      int status = 0;
      if (c.family) {
        const fuzz::Family& f = *c.family;
        moe_route_params_v2 params{};
        params.struct_size = sizeof(params);
        params.tokens = c.tokens;
        params.experts = c.experts;
        params.k = c.k;
        params.score = f.score;
        params.bias = f.bias.empty() ? nullptr : f.bias.data();
        params.groups = f.groups;
        params.topk_groups = f.topkGroups;
        params.group_score = f.groupScore;
        params.renormalize = f.renormalize;
        params.scale = f.scale;
        status = r->route_v2(&params, c.logits.data(), ids.data(), gates.data(), 1);
      } else {
        status = r->route(c.tokens, c.experts, c.k, c.logits.data(), ids.data(), gates.data(), 1);
      }
      if (status != 0) state.SkipWithError("the kernel refused a case");
      benchmark::DoNotOptimize(ids.data());
      tokens += static_cast<uint64_t>(c.tokens);
    }
  }
  tokensPerSecond(state, tokens);
}

void judge(benchmark::State& state, const Row& row, int jobs) {
  const Prepared& p = prepared(row);
  fuzz::VerdictConfig config;
  config.jobs = jobs;
  fuzz::LevelCounters levels;
  uint64_t tokens = 0, violations = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < p.cases.size(); ++i) {
      const auto r = fuzz::judgeRecorded(p.cases[i], p.outputs[i].ids, p.outputs[i].gates,
                                         p.contract, config, levels);
      tokens += r.tokens.size();
      violations += r.violation ? 1 : 0;
    }
  }
  tokensPerSecond(state, tokens);
  state.counters["first_level"] =
      tokens > 0 ? static_cast<double>(levels.firstLevel) / static_cast<double>(tokens) : 0.0;
  if (violations > 0) state.SkipWithError("the router under the judge violated the spec");
}

class JudgeRatios final : public RatioReporter {
 public:
  JudgeRatios() : RatioReporter("tokens_per_s") {}
  void printRatios() const override {
    std::printf("\nrouter: %s; T = %d, %d cases per row\n", bestRouterName().c_str(), kTokens,
                kCases);
    std::printf("%-18s %14s %14s %14s %10s %10s %s\n", "row", "kernel tok/s", "judge 1 core",
                "judge jobs 2", "1 core", "jobs 2", "target 1/10, one core");
    for (const Row& row : kRows) {
      const std::string r = row.name;
      const double k = find("kernel/" + r), j1 = find("judge/" + r + "/jobs:1"),
                   j2 = find("judge/" + r + "/jobs:2/real_time");
      if (k <= 0) continue;
      std::printf("%-18s %14.0f %14.0f %14.0f %10.3f %10.3f %s\n", row.name, k, j1, j2, j1 / k,
                  j2 / k, j1 / k >= 0.1 ? "met" : "NOT met");
    }
  }
};

void registerAll() {
  for (const Row& row : kRows) {
    benchmark::RegisterBenchmark(("kernel/" + std::string(row.name)).c_str(),
                                 [&row](benchmark::State& s) { kernel(s, row); })
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("judge/" + std::string(row.name) + "/jobs:1").c_str(),
                                 [&row](benchmark::State& s) { judge(s, row, 1); })
        ->Unit(benchmark::kMillisecond);
    // Two threads: wall-clock time (the CPU time of the main thread would flatter it).
    benchmark::RegisterBenchmark(("judge/" + std::string(row.name) + "/jobs:2").c_str(),
                                 [&row](benchmark::State& s) { judge(s, row, 2); })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
}

}  // namespace
}  // namespace moe::bench

int main(int argc, char** argv) {
  moe::bench::JudgeRatios reporter;
  return moe::bench::runBenchmarks(argc, argv, moe::bench::registerAll, reporter);
}
