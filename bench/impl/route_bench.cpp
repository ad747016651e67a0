// Router throughput at T = 65,536 tokens, E in {8, 64, 256}, k in {1, 2, 8}, on one core
// and on all cores, for every built-in router and two baselines measured in the same run:
// a std::partial_sort router (partial_sort_router.hpp) and the read roof (read_roof.hpp).
// Counters: tokens_per_s and bytes_per_second (logits read). At the end a table gives each
// router's fraction of the roof and its speed-up over partial_sort, and checks the targets
// at E = 64, k = 8, one core.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "moe/routers.hpp"
#include "partial_sort_router.hpp"
#include "ratio_reporter.hpp"
#include "read_roof.hpp"

namespace moe::bench {
namespace {

constexpr int32_t kTokens = 65536;
constexpr int32_t kExperts[] = {8, 64, 256};
constexpr int32_t kTopK[] = {1, 2, 8};

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

int32_t coresFor(int32_t threads) {
  return threads == 0 ? int32_t(std::max(1u, std::thread::hardware_concurrency())) : threads;
}

// Splits [0, tokens) into contiguous chunks, one per thread (for the baselines).
template <class Fn>
void splitTokens(int32_t threads, Fn fn) {
  const int32_t n = coresFor(threads);
  std::vector<std::thread> pool;
  for (int32_t w = 1; w < n; ++w) {
    pool.emplace_back([=] { fn(int64_t{kTokens} * w / n, int64_t{kTokens} * (w + 1) / n); });
  }
  fn(0, int64_t{kTokens} / n);
  for (auto& t : pool) t.join();
}

void setCounters(benchmark::State& state, int32_t experts) {
  const auto iters = static_cast<double>(state.iterations());
  state.counters["tokens_per_s"] = benchmark::Counter(iters * kTokens, benchmark::Counter::kIsRate);
  state.SetBytesProcessed(static_cast<int64_t>(iters * kTokens * experts * sizeof(float)));
}

void routerBench(benchmark::State& state, const BuiltinRouter* router, int32_t experts, int32_t k,
                 int32_t threads) {
  if (!router->available()) {
    state.SkipWithError("this CPU lacks the router's ISA");
    return;
  }
  const auto& x = logitsFor(experts);
  std::vector<int32_t> ids(size_t(kTokens) * k);
  std::vector<float> gates(ids.size());
  for (auto _ : state) {
    if (router->route(kTokens, experts, k, x.data(), ids.data(), gates.data(), threads) != 0) {
      state.SkipWithError("route failed");
      return;
    }
    benchmark::DoNotOptimize(ids.data());
    benchmark::DoNotOptimize(gates.data());
    benchmark::ClobberMemory();
  }
  setCounters(state, experts);
}

void partialSortBench(benchmark::State& state, int32_t experts, int32_t k, int32_t threads) {
  const auto& x = logitsFor(experts);
  std::vector<int32_t> ids(size_t(kTokens) * k);
  std::vector<float> gates(ids.size());
  for (auto _ : state) {
    splitTokens(threads, [&](int64_t begin, int64_t end) {
      partialSortRows(x.data() + begin * experts, end - begin, experts, k, ids.data() + begin * k,
                      gates.data() + begin * k);
    });
    benchmark::DoNotOptimize(ids.data());
    benchmark::ClobberMemory();
  }
  setCounters(state, experts);
}

void readRoofBench(benchmark::State& state, int32_t experts, int32_t threads) {
  const auto& x = logitsFor(experts);
  std::vector<float> sums(size_t(coresFor(threads)));
  for (auto _ : state) {
    splitTokens(threads, [&](int64_t begin, int64_t end) {
      const float s = sumFloats(x.data() + begin * experts, size_t((end - begin) * experts));
      sums[size_t(begin * coresFor(threads) / kTokens)] = s;
    });
    benchmark::DoNotOptimize(sums.data());
    benchmark::ClobberMemory();
  }
  setCounters(state, experts);
}

std::string configName(int32_t experts, int32_t k, int32_t threads) {
  return "E:" + std::to_string(experts) + (k > 0 ? "/k:" + std::to_string(k) : "") +
         (threads == 1 ? "/one_core" : "/all_cores");
}

// One core: time on the CPU (the CI machine is shared; waiting for a core is not the
// router's cost). All cores: wall-clock time, since the work is spread over threads.
void timeFor(benchmark::internal::Benchmark* b, int32_t threads) {
  if (threads != 1) b->UseRealTime();
  b->Unit(benchmark::kMillisecond);
}

void registerAll() {
  for (const int32_t threads : {1, 0}) {
    for (const int32_t experts : kExperts) {
      timeFor(benchmark::RegisterBenchmark(("read_roof/" + configName(experts, 0, threads)).c_str(),
                                           readRoofBench, experts, threads),
              threads);
      for (const int32_t k : kTopK) {
        const std::string cfg = configName(experts, k, threads);
        timeFor(benchmark::RegisterBenchmark(("partial_sort/" + cfg).c_str(), partialSortBench,
                                             experts, k, threads),
                threads);
        for (const auto& router : builtinRouters()) {
          timeFor(benchmark::RegisterBenchmark(
                      ("route/" + std::string(router.name) + "/" + cfg).c_str(), routerBench,
                      &router, experts, k, threads),
                  threads);
        }
      }
    }
  }
}

// The ratios of this run: the reporter keeps each run's bytes_per_second.
class Ratios : public RatioReporter {
 public:
  Ratios() : RatioReporter("bytes_per_second") {}
  void printRatios() const override {
    std::printf("\nratios (same run): GB/s of logits read, %% of read roof, x partial_sort\n");
    for (const int32_t threads : {1, 0}) {
      for (const int32_t experts : kExperts) {
        const double roof = find("read_roof/" + configName(experts, 0, threads));
        for (const int32_t k : kTopK) {
          const std::string cfg = configName(experts, k, threads);
          const double base = find("partial_sort/" + cfg);
          if (roof <= 0 || base <= 0) continue;
          std::printf("%-24s roof %6.2f GB/s, partial_sort %6.2f GB/s\n", cfg.c_str(), roof / 1e9,
                      base / 1e9);
          for (const auto& router : builtinRouters()) {
            const double r = find("route/" + std::string(router.name) + "/" + cfg);
            if (r <= 0) continue;
            std::printf("  %-14s %7.2f GB/s %6.1f%% of roof %6.2fx partial_sort\n",
                        std::string(router.name).c_str(), r / 1e9, 100 * r / roof, r / base);
          }
        }
      }
    }
    checkTarget("avx512-logits", 0.50, 5.0);
    checkTarget("avx512-probs", 0.25, 0.0);
  }

 private:
  void checkTarget(const std::string& router, double roofShare, double overPartialSort) const {
    const std::string cfg = configName(64, 8, 1);
    const double r = find("route/" + router + "/" + cfg);
    const double roof = find("read_roof/" + configName(64, 0, 1));
    const double base = find("partial_sort/" + cfg);
    if (r <= 0 || roof <= 0 || base <= 0) return;
    const bool met = r >= roofShare * roof && r >= overPartialSort * base;
    std::printf(
        "target %s at %s: %.1f%% of roof (want >= %.0f%%), %.2fx partial_sort (want >= "
        "%.0fx): %s\n",
        router.c_str(), cfg.c_str(), 100 * r / roof, 100 * roofShare, r / base, overPartialSort,
        met ? "MET" : "NOT MET");
  }
};

}  // namespace
}  // namespace moe::bench

int main(int argc, char** argv) {
  moe::bench::Ratios ratios;
  return moe::bench::runBenchmarks(argc, argv, moe::bench::registerAll, ratios);
}
