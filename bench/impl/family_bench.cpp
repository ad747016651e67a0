// moe_route_v2 throughput at the configurations of today's open models, one core,
// T = 65,536 tokens, logits in: DeepSeek-V3 (E = 256, k = 8, sigmoid, bias, 8 groups, top 4
// by top-2 sum, renormalised, scale 2.5), Kimi K2 (E = 384, k = 8, sigmoid, bias, one group,
// renormalised, scale 2.827) and Llama 4 Maverick (E = 128, k = 1, sigmoid, raw gates).
// Beside each: vLLM's reference grouped_topk in plain C++ with std::partial_sort
// (grouped_topk_router.hpp) and the read roof (read_roof.hpp), measured in the same run; the
// ratios are printed at the end and the DeepSeek-V3 targets checked (>= 20x the reference,
// >= 40% of the roof). Also v1 (softmax top-k) at the shapes of current models, beside
// the partial_sort router (partial_sort_router.hpp): --benchmark_filter=^v1/ runs those
// alone, --benchmark_filter=^[^v] the v2 part alone (the ratios print for whatever ran).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "grouped_topk_router.hpp"
#include "moe/route_abi.h"
#include "moe/routers.hpp"
#include "partial_sort_router.hpp"
#include "ratio_reporter.hpp"
#include "read_roof.hpp"

namespace moe::bench {
namespace {

constexpr int32_t kTokens = 65536;

struct Model {
  const char* name;
  int32_t experts, k;
  bool sigmoid, bias;
  int32_t groups, topkGroups;
  bool top2Sum, renormalize;
  float scale;
};

constexpr Model kModels[] = {
    {"DeepSeek-V3", 256, 8, true, true, 8, 4, true, true, 2.5f},
    {"Kimi-K2", 384, 8, true, true, 1, 1, false, true, 2.827f},
    {"Llama-4", 128, 1, true, false, 1, 1, false, false, 1.0f},
};

// The v2 kernels, one per ISA (the -probs and -logits libraries share them).
constexpr const char* kRouters[] = {"scalar-logits", "avx2-logits", "avx512-logits"};

const std::vector<float>& logitsFor(int32_t experts) {
  static std::map<int32_t, std::vector<float>> cache;
  auto& x = cache[experts];
  if (x.empty()) {
    std::mt19937 rng(static_cast<uint32_t>(experts));
    std::normal_distribution<float> logit(0.0f, 2.0f);
    x.resize(size_t(kTokens) * experts);
    for (auto& v : x) v = logit(rng);
  }
  return x;
}

// e_score_correction_bias is small next to the scores; DeepSeek-V3's are within ~0.1.
const std::vector<float>& biasFor(int32_t experts) {
  static std::map<int32_t, std::vector<float>> cache;
  auto& b = cache[experts];
  if (b.empty()) {
    std::mt19937 rng(static_cast<uint32_t>(experts) + 1);
    std::uniform_real_distribution<float> dist(-0.1f, 0.1f);
    b.resize(size_t(experts));
    for (auto& v : b) v = dist(rng);
  }
  return b;
}

moe_route_params_v2 paramsFor(const Model& m) {
  moe_route_params_v2 p{};
  p.struct_size = sizeof(p);
  p.tokens = kTokens;
  p.experts = m.experts;
  p.k = m.k;
  p.score = m.sigmoid ? MOE_SCORE_SIGMOID : MOE_SCORE_SOFTMAX;
  p.bias = m.bias ? biasFor(m.experts).data() : nullptr;
  p.groups = m.groups;
  p.topk_groups = m.topkGroups;
  p.group_score = m.top2Sum ? MOE_GROUP_TOP2_SUM : MOE_GROUP_MAX;
  p.renormalize = m.renormalize ? 1 : 0;
  p.scale = m.scale;
  return p;
}

void setCounters(benchmark::State& state, int32_t experts) {
  const auto iters = static_cast<double>(state.iterations());
  state.counters["tokens_per_s"] = benchmark::Counter(iters * kTokens, benchmark::Counter::kIsRate);
  state.SetBytesProcessed(static_cast<int64_t>(iters * kTokens * experts * sizeof(float)));
}

void routerBench(benchmark::State& state, const BuiltinRouter* router, const Model* m) {
  if (!router->available()) {
    state.SkipWithError("this CPU lacks the router's ISA");
    return;
  }
  const auto& x = logitsFor(m->experts);
  const moe_route_params_v2 p = paramsFor(*m);
  std::vector<int32_t> ids(size_t(kTokens) * m->k);
  std::vector<float> gates(ids.size());
  for (auto _ : state) {
    if (router->route_v2(&p, x.data(), ids.data(), gates.data(), 1) != 0) {
      state.SkipWithError("route failed");
      return;
    }
    benchmark::DoNotOptimize(ids.data());
    benchmark::DoNotOptimize(gates.data());
    benchmark::ClobberMemory();
  }
  setCounters(state, m->experts);
}

void referenceBench(benchmark::State& state, const Model* m) {
  const auto& x = logitsFor(m->experts);
  const GroupedTopkConfig c{
      m->experts, m->k,          m->sigmoid, m->bias ? biasFor(m->experts).data() : nullptr,
      m->groups,  m->topkGroups, m->top2Sum, m->renormalize,
      m->scale};
  std::vector<int32_t> ids(size_t(kTokens) * m->k);
  std::vector<float> gates(ids.size());
  for (auto _ : state) {
    groupedTopkRows(c, x.data(), kTokens, ids.data(), gates.data());
    benchmark::DoNotOptimize(ids.data());
    benchmark::ClobberMemory();
  }
  setCounters(state, m->experts);
}

void readRoofBench(benchmark::State& state, const Model* m) {
  const auto& x = logitsFor(m->experts);
  for (auto _ : state) {
    benchmark::DoNotOptimize(sumFloats(x.data(), x.size()));
    benchmark::ClobberMemory();
  }
  setCounters(state, m->experts);
}

// v1 (softmax top-k) at the shapes of current models (the last item), with the
// partial_sort router and the roof of the same E: Kimi K2, Qwen3-Next, Mixtral, Llama 4 Scout.
struct V1Shape {
  int32_t experts, k;
};
constexpr V1Shape kV1Shapes[] = {{384, 8}, {512, 10}, {8, 2}, {16, 1}};
constexpr const char* kV1Routers[] = {"avx512-logits", "avx512-probs"};

std::string v1Name(V1Shape v) {
  return "E:" + std::to_string(v.experts) + "/k:" + std::to_string(v.k) + "/one_core";
}

void v1RouterBench(benchmark::State& state, const BuiltinRouter* router, V1Shape v) {
  if (!router->available()) {
    state.SkipWithError("this CPU lacks the router's ISA");
    return;
  }
  const auto& x = logitsFor(v.experts);
  std::vector<int32_t> ids(size_t(kTokens) * v.k);
  std::vector<float> gates(ids.size());
  for (auto _ : state) {
    if (router->route(kTokens, v.experts, v.k, x.data(), ids.data(), gates.data(), 1) != 0) {
      state.SkipWithError("route failed");
      return;
    }
    benchmark::DoNotOptimize(ids.data());
    benchmark::ClobberMemory();
  }
  setCounters(state, v.experts);
}

void v1PartialSortBench(benchmark::State& state, V1Shape v) {
  const auto& x = logitsFor(v.experts);
  std::vector<int32_t> ids(size_t(kTokens) * v.k);
  std::vector<float> gates(ids.size());
  for (auto _ : state) {
    partialSortRows(x.data(), kTokens, v.experts, v.k, ids.data(), gates.data());
    benchmark::DoNotOptimize(ids.data());
    benchmark::ClobberMemory();
  }
  setCounters(state, v.experts);
}

void v1RoofBench(benchmark::State& state, V1Shape v) {
  const auto& x = logitsFor(v.experts);
  for (auto _ : state) {
    benchmark::DoNotOptimize(sumFloats(x.data(), x.size()));
    benchmark::ClobberMemory();
  }
  setCounters(state, v.experts);
}

// The read roof plus a router's writes: where k ids and k gates a token are a large share
// of the bytes (E = 8, k = 2: 16 written for 32 read), no router reaches the read roof.
void v1ReadWriteRoofBench(benchmark::State& state, V1Shape v) {
  const auto& x = logitsFor(v.experts);
  std::vector<int32_t> ids(size_t(kTokens) * v.k);
  std::vector<float> gates(ids.size());
  for (auto _ : state) {
    readAndWrite(x.data(), kTokens, size_t(v.experts), size_t(v.k), ids.data(), gates.data());
    benchmark::DoNotOptimize(ids.data());
    benchmark::ClobberMemory();
  }
  setCounters(state, v.experts);
}

void registerAll() {
  for (const V1Shape& v : kV1Shapes) {
    benchmark::RegisterBenchmark(("v1/read_roof/" + v1Name(v)).c_str(), v1RoofBench, v)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("v1/read_write_roof/" + v1Name(v)).c_str(), v1ReadWriteRoofBench,
                                 v)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("v1/partial_sort/" + v1Name(v)).c_str(), v1PartialSortBench, v)
        ->Unit(benchmark::kMillisecond);
    for (const char* name : kV1Routers) {
      benchmark::RegisterBenchmark(("v1/" + std::string(name) + "/" + v1Name(v)).c_str(),
                                   v1RouterBench, findRouter(name), v)
          ->Unit(benchmark::kMillisecond);
    }
  }
  for (const Model& m : kModels) {
    const std::string cfg = std::string(m.name) + "/one_core";
    benchmark::RegisterBenchmark(("read_roof/" + cfg).c_str(), readRoofBench, &m)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("grouped_topk/" + cfg).c_str(), referenceBench, &m)
        ->Unit(benchmark::kMillisecond);
    for (const char* name : kRouters) {
      benchmark::RegisterBenchmark(("route_v2/" + std::string(name) + "/" + cfg).c_str(),
                                   routerBench, findRouter(name), &m)
          ->Unit(benchmark::kMillisecond);
    }
  }
}

// The ratios of this run: the reporter keeps each run's tokens_per_s.
class Ratios : public RatioReporter {
 public:
  Ratios() : RatioReporter("tokens_per_s") {}
  void printRatios() const override {
    std::printf(
        "\nratios (same run, one core, T = %d): M tokens/s, %% of read roof, x grouped_topk\n",
        kTokens);
    for (const Model& m : kModels) {
      const std::string cfg = std::string(m.name) + "/one_core";
      const double roof = find("read_roof/" + cfg);
      const double base = find("grouped_topk/" + cfg);
      if (roof <= 0 || base <= 0) continue;
      std::printf("%-12s E=%d k=%d: roof %.2f M tokens/s, grouped_topk %.3f M tokens/s\n", m.name,
                  m.experts, m.k, roof / 1e6, base / 1e6);
      for (const char* name : kRouters) {
        const double r = find("route_v2/" + std::string(name) + "/" + cfg);
        if (r <= 0) continue;
        std::printf("  %-14s %7.2f M tokens/s %6.2f%% of roof %7.2fx grouped_topk\n", name, r / 1e6,
                    100 * r / roof, r / base);
      }
    }
    for (const V1Shape& v : kV1Shapes) {
      const double roof = find("v1/read_roof/" + v1Name(v));
      const double readWrite = find("v1/read_write_roof/" + v1Name(v));
      const double base = find("v1/partial_sort/" + v1Name(v));
      if (roof <= 0 || base <= 0 || readWrite <= 0) continue;
      std::printf(
          "v1 E=%d k=%d: roof %.2f M tokens/s (with the writes: %.2f), partial_sort %.3f M "
          "tokens/s\n",
          v.experts, v.k, roof / 1e6, readWrite / 1e6, base / 1e6);
      for (const char* name : kV1Routers) {
        const double r = find("v1/" + std::string(name) + "/" + v1Name(v));
        if (r <= 0) continue;
        const bool met = r >= 0.4 * roof && r >= 20 * base;
        std::printf(
            "  %-14s %7.2f M tokens/s %6.2f%% of roof (%6.2f%% with the writes) %7.2fx "
            "partial_sort: target (>= 40%% of roof, >= 20x) %s\n",
            name, r / 1e6, 100 * r / roof, 100 * r / readWrite, r / base, met ? "MET" : "NOT MET");
      }
    }
    const std::string cfg = "DeepSeek-V3/one_core";
    const double r = find("route_v2/avx512-logits/" + cfg);
    const double roof = find("read_roof/" + cfg);
    const double base = find("grouped_topk/" + cfg);
    if (r > 0 && roof > 0 && base > 0) {
      const bool met = r >= 0.4 * roof && r >= 20 * base;
      std::printf(
          "target avx512 v2 at DeepSeek-V3: %.2f%% of roof (want >= 40%%), %.2fx grouped_topk "
          "(want >= 20x): %s\n",
          100 * r / roof, r / base, met ? "MET" : "NOT MET");
    }
  }
};

}  // namespace
}  // namespace moe::bench

int main(int argc, char** argv) {
  moe::bench::Ratios ratios;
  return moe::bench::runBenchmarks(argc, argv, moe::bench::registerAll, ratios);
}
