// The row kernels behind the built-in routers, exposed for tests and benchmarks.
// Routers proper (argument checks, threads) are in routers.hpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "moe/route_abi.h"

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

// Runs fn(begin, end) over contiguous chunks of [0, tokens) on up to `threads` threads
// (0 = all cores; only as many as tokens * experts pays for). Returns MOE_ROUTE_OK, or
// MOE_ROUTE_EINTERNAL when fn threw (std::bad_alloc) or no thread could start.
int runChunks(int32_t tokens, int32_t experts, int32_t threads,
              const std::function<void(int64_t begin, int64_t end)>& fn);

// --- moe_route_v2: the routing family (route_abi.h) -----------------------------------

// moe_route_params_v2 once checked: every field in its domain.
struct FamilyParams {
  int32_t experts = 0;
  int32_t k = 0;
  bool sigmoid = false;
  const float* bias = nullptr;  // experts entries, or nullptr
  int32_t groups = 1;
  int32_t topkGroups = 1;
  bool top2Sum = false;  // group score: sum of the two best keys (else their max)
  bool renormalize = false;
  float scale = 1.0f;

  int32_t groupSize() const { return groups == 0 ? 0 : experts / groups; }
  // Eligible experts: all of them without groups, else those of the kept groups.
  int32_t eligibleCount() const { return groups == 1 ? experts : topkGroups * groupSize(); }
  int32_t keptCount() const { return std::min(k, eligibleCount()); }
};

// Routes `rows` consecutive tokens by the family's rule. Preconditions (checked by
// runRowsV2): rows >= 0, experts >= 1, k >= 1, parameters in their domain.
using FamilyRowsFn = void (*)(const FamilyParams& p, const float* logits, int64_t rows,
                              int32_t* ids, float* gates);

void scalarFamilyRows(const FamilyParams&, const float*, int64_t, int32_t*, float*);
void avx2FamilyRows(const FamilyParams&, const float*, int64_t, int32_t*, float*);
void avx512FamilyRows(const FamilyParams&, const float*, int64_t, int32_t*, float*);
void autoFamilyRows(const FamilyParams&, const float*, int64_t, int32_t*, float*);
// For tests: the AVX-512 rows with every score exact (no screening by the estimate), which
// avx512FamilyRows must equal bit for bit; its sigmoid and the estimate it screens with,
// element-wise; and the estimate's bound, the largest |estimate - sigmoid| over all floats
// (derived in sigmoid_estimate-inl.h; tests/impl/route_v2_screen_test.cpp measures it).
void avx512FamilyRowsUnscreened(const FamilyParams&, const float*, int64_t, int32_t*, float*);
void avx512FamilySigmoid(const float* in, float* out, size_t n);
void avx512SigmoidEstimate(const float* in, float* out, size_t n);
inline constexpr float kSigmoidEstimateError = 7.0e-5f;

// The statuses of route_abi.h for v2, in its order: p NULL, struct_size, sizes, the
// family's fields, NULL buffers, overflow. On success, *out holds the parameters.
int checkParamsV2(const moe_route_params_v2* p, const float* logits, const int32_t* ids,
                  const float* gates, FamilyParams* out);

// moe_route_v2 with the thread count of RouteFn (0 = all cores; negative: EBADSIZE).
int runRowsV2(FamilyRowsFn rows, const moe_route_params_v2* p, const float* logits, int32_t* ids,
              float* gates, int32_t threads);

}  // namespace moe::detail
