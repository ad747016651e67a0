// Oracle throughput on one core, tokens per second, for E in {8, 64, 256} and k in {2, 8}:
//   BM_Route             the spec's kept experts of a binary32 row (float compares only);
//   BM_RouteCertified    the same plus the certified gates of the kept set (k exponentials,
//                        correctly rounded binary32/binary64, 2^-60 enclosures);
//   BM_GatesEnclosure    the full certified gatesVecSpec vector (length E, zeros included).
// Targets: BM_Route >= 1e6 tokens/s at E = 64; BM_RouteCertified >= 1e5 at
// E = 64, k = 8. Counters: zivLevel0, the share of tokens the first precision decided;
// fastExp, the share of exponentials the fixed-point filter certified (the rest: mpfr_exp).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "moe/oracle/certified/gates.hpp"
#include "moe/oracle/routing.hpp"

namespace {

constexpr std::size_t kRows = 512;

std::vector<float> makeLogits(std::size_t E) {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> l(kRows * E);
  for (auto& x : l) x = normal(rng);
  return l;
}

void BM_Route(benchmark::State& state) {
  const std::size_t E = state.range(0), k = state.range(1);
  const std::vector<float> logits = makeLogits(E);
  std::size_t row = 0;
  for (auto _ : state) {
    const auto kept =
        moe::oracle::keptExperts(k, std::span<const float>(logits.data() + row * E, E));
    benchmark::DoNotOptimize(kept.data());
    row = (row + 1) % kRows;
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_RouteCertified(benchmark::State& state) {
  const std::size_t E = state.range(0), k = state.range(1);
  const std::vector<float> logits = makeLogits(E);
  moe::oracle::certified::resetZivStats();
  std::size_t row = 0;
  for (auto _ : state) {
    const std::span<const float> l(logits.data() + row * E, E);
    const auto kept = moe::oracle::keptExperts(k, l);
    const auto gates = moe::oracle::certified::keptGatesEnclosure(l, kept);
    benchmark::DoNotOptimize(gates.data());
    row = (row + 1) % kRows;
  }
  state.SetItemsProcessed(state.iterations());
  const auto stats = moe::oracle::certified::zivStats();
  state.counters["zivLevel0"] = stats.total() ? double(stats.decidedAtLevel[0]) / stats.total() : 0;
  const double exps = double(stats.fastExps + stats.mpfrExps);
  state.counters["fastExp"] = exps > 0 ? double(stats.fastExps) / exps : 0;
}

void BM_GatesEnclosure(benchmark::State& state) {
  const std::size_t E = state.range(0), k = state.range(1);
  const std::vector<float> logits = makeLogits(E);
  std::size_t row = 0;
  for (auto _ : state) {
    const auto gates = moe::oracle::certified::gatesEnclosure(
        k, std::span<const float>(logits.data() + row * E, E));
    benchmark::DoNotOptimize(gates.data());
    row = (row + 1) % kRows;
  }
  state.SetItemsProcessed(state.iterations());
}

void shapes(benchmark::internal::Benchmark* b) {
  for (int E : {8, 64, 256}) {
    for (int k : {2, 8}) b->Args({E, k});
  }
  b->ArgNames({"E", "k"});
}

BENCHMARK(BM_Route)->Apply(shapes);
BENCHMARK(BM_RouteCertified)->Apply(shapes);
BENCHMARK(BM_GatesEnclosure)->Apply(shapes);

}  // namespace

BENCHMARK_MAIN();
