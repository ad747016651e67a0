// Tokens judged per second by the layer verdict (docs/fuzz.md, "The fused layer") at
// H = 1,024, I = 512, E = 64, k = 8 (a batch of 512 tokens), beside the tokens per second of the
// in-tree Eigen layer (libmoe_layer_eigen.so, called in this process through moe_layer_v1) on the
// same batch: the judge costs what a binary64 evaluation of the kept experts costs, the kernel a
// binary32 one, so their ratio says how much slower than the kernel a campaign runs.
//   build/bin/bench_layer_judge --benchmark_min_time=2s
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>

#include "moe/fuzz/layer_kernel.hpp"
#include "moe/fuzz/layer_verdict.hpp"

namespace {

using namespace moe::fuzz;

constexpr int32_t kT = 512, kH = 1024, kI = 512, kE = 64, kK = 8;

const LayerCase& benchCase() {
  static const LayerCase c = [] {
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    LayerCase c;
    c.tokens = kT, c.hidden = kH, c.intermediate = kI, c.experts = kE, c.k = kK;
    c.x.resize(size_t{kT} * kH);
    c.logits.resize(size_t{kT} * kE);
    c.w13.resize(size_t{kE} * 2 * kI * kH);
    c.w2.resize(size_t{kE} * kH * kI);
    for (float& v : c.x) v = u(rng);
    for (float& v : c.logits) v = 4 * u(rng);
    for (float& v : c.w13) v = u(rng) / std::sqrt(float(kH));
    for (float& v : c.w2) v = u(rng) / std::sqrt(float(kI));
    return c;
  }();
  return c;
}

const LayerKernel& eigenLayer() {
  static const auto kernel = [] {
    DoorOptions o;
    o.inProcess = true;
    return openLayerLibrary(MOE_EIGEN_LAYER, o);
  }();
  return *kernel;
}

// The Eigen layer's own call: tokens through moe_layer_v1 per second.
void BM_EigenLayer(benchmark::State& state) {
  const LayerCase& c = benchCase();
  for (auto _ : state) {
    LayerOutput out = eigenLayer().run(c, true);
    benchmark::DoNotOptimize(out.y.data());
  }
  state.SetItemsProcessed(state.iterations() * kT);
  state.SetLabel("tokens/s (items)");
}
BENCHMARK(BM_EigenLayer)->Unit(benchmark::kMillisecond);

// The verdict on that output: routing returned (judged, then y over it), or not (y against
// every acceptable routing).
void BM_LayerJudge(benchmark::State& state) {
  const LayerCase& c = benchCase();
  const bool routed = state.range(0) != 0;
  const LayerOutput out = eigenLayer().run(c, routed);
  Judge judge;
  for (auto _ : state) {
    const LayerCaseResult r = judgeLayerOutput(c, out, eigenLayer().contract(), judge, {});
    if (r.violation) state.SkipWithError("the Eigen layer's output was judged a violation");
    benchmark::DoNotOptimize(r.tokens.data());
  }
  state.SetItemsProcessed(state.iterations() * kT);
  state.SetLabel(routed ? "routing returned; tokens/s (items)" : "no routing; tokens/s (items)");
}
BENCHMARK(BM_LayerJudge)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
