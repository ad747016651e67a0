// The row kernels behind the built-in routers, exposed for tests and benchmarks.
// Routers proper (argument checks, threads) are in routers.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace moe::detail {

// Routes `rows` consecutive tokens. Preconditions (checked by runRows): rows >= 0,
// experts >= 1, k >= 1, every pointer valid for rows*experts / rows*k elements.
using RowsFn = void (*)(const float* logits, int64_t rows, int32_t experts, int32_t k, int32_t* ids,
                        float* gates);

void scalarProbsRows(const float*, int64_t, int32_t, int32_t, int32_t*, float*);
void scalarLogitsRows(const float*, int64_t, int32_t, int32_t, int32_t*, float*);
// Highway targets called by name (N_AVX2, N_AVX3): only when cpuHasAvx2/cpuHasAvx512.
void avx2ProbsRows(const float*, int64_t, int32_t, int32_t, int32_t*, float*);
void avx2LogitsRows(const float*, int64_t, int32_t, int32_t, int32_t*, float*);
void avx512ProbsRows(const float*, int64_t, int32_t, int32_t, int32_t*, float*);
void avx512LogitsRows(const float*, int64_t, int32_t, int32_t, int32_t*, float*);
// Highway dynamic dispatch: the best target compiled in and supported by this CPU.
void autoProbsRows(const float*, int64_t, int32_t, int32_t, int32_t*, float*);
void autoLogitsRows(const float*, int64_t, int32_t, int32_t, int32_t*, float*);

// The vector exp each SIMD router applies to x - max (Highway's Exp), element-wise.
void avx2Exp(const float* in, float* out, size_t n);
void avx512Exp(const float* in, float* out, size_t n);
void autoExp(const float* in, float* out, size_t n);
// The AVX-512 routing kernels' own exp for x <= 0 (fast_exp-inl.h), which the avx512 and
// auto routers also apply where those kernels run.
void avx512FastExp(const float* in, float* out, size_t n);
// The name of the Highway target autoProbsRows/autoLogitsRows dispatch to.
const char* autoTargetName();

bool cpuHasAvx2();
bool cpuHasAvx512();

// Validates the arguments (route_abi.h rules, plus threads >= 0), fills empty slots, and
// runs `rows` over contiguous token chunks on up to `threads` threads (0 = all cores).
// Returns a MOE_ROUTE_* code; on error nothing is written.
int runRows(RowsFn rows, int32_t tokens, int32_t experts, int32_t k, const float* logits,
            int32_t* ids, float* gates, int32_t threads);

}  // namespace moe::detail
