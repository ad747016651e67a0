// The CUDA routing kernel's time per call at 1, 1,024 and 65,536 tokens (E = 256, k = 8),
// logits already on the device (copies not timed), timed with CUDA events.
//   build/bin/cuda_route_bench
// Without a usable GPU it prints why and exits 0, measuring nothing.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <exception>

#include "moe/cuda/route_cuda.hpp"

namespace {

void BM_CudaRouteKernel(benchmark::State& state) {
  const auto tokens = static_cast<std::int32_t>(state.range(0));
  constexpr std::int32_t kExperts = 256, kSlots = 8, kLaunchesPerIteration = 20;
  for (auto _ : state) {
    try {
      const double micros =
          moe::cuda::kernelMicrosPerCall(tokens, kExperts, kSlots, kLaunchesPerIteration);
      state.SetIterationTime(micros * 1e-6);
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * tokens);
  state.counters["E"] = kExperts;
  state.counters["k"] = kSlots;
}

BENCHMARK(BM_CudaRouteKernel)
    ->Arg(1)
    ->Arg(1024)
    ->Arg(65536)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  const std::string why = moe::cuda::unavailableReason();
  if (!why.empty()) {
    std::printf("cuda_route_bench: no usable CUDA device (%s); nothing measured.\n", why.c_str());
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
