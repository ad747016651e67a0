// Sparse vs dense forward of moe::Layer at E = 64, k = 2 (the target: sparse at least
// (E/k)/2 = 16x faster than dense), T = 1024 tokens, d = 256, h = 512, on one core.
//   build/bin/layer_bench            (prints both runs, then the ratio against the target)
#include <benchmark/benchmark.h>

#include <cstdio>
#include <random>

#include "moe/layer.hpp"
#include "ratio_reporter.hpp"

namespace {

constexpr std::int64_t kModel = 256, kHidden = 512, kExperts = 64, kSlots = 2, kTokens = 1024;

const moe::Layer& benchLayer() {
  static const moe::Layer layer =
      moe::Layer::random({kModel, kHidden, kExperts, kSlots}, /*seed=*/2024, "auto-probs");
  return layer;
}

const moe::RowMatrix& benchTokens() {
  static const moe::RowMatrix x = [] {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    moe::RowMatrix m(kTokens, kModel);
    for (std::int64_t i = 0; i < m.size(); ++i) m.data()[i] = uniform(rng);
    return m;
  }();
  return x;
}

// Routing included in both (it is the same small cost); the difference is the expert work.
void BM_LayerDense(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(benchLayer().forwardDense(benchTokens()));
  state.SetItemsProcessed(state.iterations() * kTokens);
}

void BM_LayerSparse(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(benchLayer().forwardSparse(benchTokens()));
  state.SetItemsProcessed(state.iterations() * kTokens);
}

BENCHMARK(BM_LayerDense)->Unit(benchmark::kMillisecond)->MinTime(0.5);
BENCHMARK(BM_LayerSparse)->Unit(benchmark::kMillisecond)->MinTime(0.5);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::printf("moe::Layer T=%lld d=%lld h=%lld E=%lld k=%lld, one core\n",
              static_cast<long long>(kTokens), static_cast<long long>(kModel),
              static_cast<long long>(kHidden), static_cast<long long>(kExperts),
              static_cast<long long>(kSlots));
  moe::bench::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const double dense = reporter.seconds("BM_LayerDense/min_time:0.500");
  const double sparse = reporter.seconds("BM_LayerSparse/min_time:0.500");
  if (dense > 0 && sparse > 0) {
    const double target = static_cast<double>(kExperts) / kSlots / 2;
    std::printf("sparse speed-up over dense (CPU time): %.1fx (target >= %.0fx: %s)\n",
                dense / sparse, target, dense / sparse >= target ? "met" : "NOT met");
  }
  benchmark::Shutdown();
  return 0;
}
