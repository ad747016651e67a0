// The vectorised moe_route_v2 (Highway, every x86 target; called by name or by dynamic
// dispatch). Per token: the scores and keys in one vector pass (sigmoid or softmax, with
// the AVX-512 kernels' own exp where there is one, and a correctly rounded division); the
// group scores of groups made of whole vectors by a merging network (AVX-512, up to 16
// groups) or lane-wise reductions; the kept groups ranked in one vector; the kept experts
// by a threshold that at least k eligible keys reach (the kept groups' second keys, or the
// k-th largest lane maximum), ranking only the keys at or above it; the gates as
// family_select.hpp writes them. Every decision applies the spec's comparisons and tie
// rule to this kernel's binary32 keys and group scores (which differ from the spec's only
// through the exp, and for softmax the order of its sum); rows that do not fit the fast
// paths (unaligned groups, more candidates than a vector, k past half a vector) take the
// scalar steps, which decide as the spec does. Tokens go four at a time, step by step.
// On AVX-512, sigmoid rows of E >= 32 are first screened with a cheap estimate of the
// sigmoid: only the experts that can still be kept get the exact one (DecideScreened),
// and the result is the same bit for bit.
// Orders of summation depend only on the parameters and the target, so a token's result
// is bitwise independent of its batch.
// This file holds the rows' loops and the choice among the exact rows, the screen and the
// token-parallel kernel (lane_family-inl.h); each step is a file of its own:
// family_scores-inl.h, family_groups-inl.h, family_selection-inl.h, family_screen-inl.h and
// family_gates-inl.h, with the per-call state in family_setup-inl.h and what the v1 kernel
// shares in simd_blocks-inl.h.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "route_family_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// foreach_target re-includes this file once per target, before highway.h.
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "family_scores-inl.h"
#include "family_screen-inl.h"
#include "family_select.hpp"
#include "family_selection-inl.h"
#include "family_setup-inl.h"
#include "invalid_flag.hpp"
#include "lane_family-inl.h"
#include "lane_network-inl.h"
#include "moe/detail/route_kernels.hpp"
#include "sigmoid_estimate-inl.h"
#include "simd_blocks-inl.h"
#include "topk_select.hpp"

HWY_BEFORE_NAMESPACE();
namespace moe::detail {
namespace HWY_NAMESPACE {
namespace family {

// Tokens go in blocks of kBlock, one step at a time for the whole block (scores, groups,
// selection): each step of one token is a short chain of dependent operations, and the
// next token's same step, independent of it, fills the gaps. A token's result is computed
// by the same code whatever its block: batch invariant.
constexpr int64_t kBlock = 4;

#if MOE_FAMILY_SCREEN
// A screened row's last step: the screen's decision where it has one, else the exact steps
// (or the non-finite row).
HWY_INLINE void FinishScreened(D d, const FamilyParams& p, const RowsSetup& setup, const float* x,
                               FamilyScratch& scratch, const Screened& screened, int32_t* rowIds,
                               float* rowGates) {
  if (screened.ok) {
    DecideScreened(d, p, setup, x, scratch, screened, rowIds, rowGates);
  } else if (ScoresAndKeys(d, p, x, scratch) &&
             (p.groups == 1 || KeepGroups(d, p, setup, scratch))) {
    SelectAndWrite(d, p, setup, scratch, rowIds, rowGates);
  } else {
    writeNonfiniteRow(p.k, setup.kk, rowIds, rowGates);
  }
}

// The screened rows' loop, kept out of Rows so that the exact rows' code is compiled as
// it was (inlined into Rows, it made the Llama 4 rows 10% slower). Rows the screen cannot
// decide take the exact steps.
HWY_NOINLINE void ScreenedRows(D d, const FamilyParams& p, const RowsSetup& setup,
                               const float* logits, int64_t rows, int32_t* ids, float* gates,
                               FamilyScratch* scratch) {
  const int32_t n = p.experts;
  Screened screened[kBlock];
  for (int64_t t0 = 0; t0 < rows; t0 += kBlock) {
    const int64_t block = std::min(kBlock, rows - t0);
    for (int64_t i = 0; i < block; ++i) {
      screened[i].ok =
          EstimateKeys(p, logits + (t0 + i) * n, size_t(kBlock) * size_t(n), scratch[i]);
    }
    // Each step for the whole block: one token's step is a chain of dependent operations.
    for (int64_t i = 0; i < block; ++i) {
      screened[i].ok = screened[i].ok && ScreenGroups(p, setup, scratch[i], screened[i]);
    }
    for (int64_t i = 0; i < block; ++i) {
      screened[i].ok = screened[i].ok && ScreenCount(d, setup, scratch[i], screened[i]);
    }
    for (int64_t i = 0; i < block; ++i) {
      const float* x = logits + (t0 + i) * n;
      int32_t* rowIds = ids + (t0 + i) * p.k;
      float* rowGates = gates + (t0 + i) * p.k;
      FinishScreened(d, p, setup, x, scratch[i], screened[i], rowIds, rowGates);
    }
  }
}
#endif

#if MOE_FAMILY_SCREEN && MOE_LANE_FAMILY
// Sigmoid rows the token-parallel kernel takes (lane_family-inl.h: DeepSeek-V3's shape
// among them), 16 at a time; the rows it hands back take the per-token screen and then the
// exact steps, so the output is the exact rows' bit for bit.
HWY_NOINLINE void LaneFamilyRows(D d, const FamilyParams& p, const RowsSetup& setup,
                                 const LaneFamily& f, const float* logits, int64_t rows,
                                 int32_t* ids, float* gates, FamilyScratch& scratch) {
  __m512 lists[8 * kLaneFamilyMaxGroups];
  __m512 drops[kLaneFamilyMaxGroups];
  LaneFamilyLeft left;
  const auto exactSigmoid = [d](__m512 x) { return Sigmoid(d, V{x}).raw; };
  const int32_t n = p.experts;
  InvalidFlagScope invalidFlag;
  // Rows of whole blocks (LaneFamily::setUp), in strided runs from kLaneStepMinExperts on.
  ForEachLaneGroup(rows, n >= kLaneStepMinExperts, [&](int64_t t0, auto step) {
    constexpr int kStep = decltype(step)::value;
    const auto group = static_cast<int32_t>(std::min<int64_t>(kNetworkGroup, rows - t0));
    const float* x0 = logits + t0 * n;
    if (left.invalidRaised) invalidFlag.Clear();
    left.invalidRaised = false;
    // DeepSeek-V3's E = 256 with its row offsets known to the compiler.
    if (group == kNetworkGroup && n == 256 && f.shortLists) {
      LaneFamilyGroup<256, 8, kStep, 4>(f, x0, group, ids + t0 * p.k, gates + t0 * p.k,
                                        exactSigmoid, lists, drops, left);
    } else if (group == kNetworkGroup && n == 256) {
      LaneFamilyGroup<256, 8, kStep, 8>(f, x0, group, ids + t0 * p.k, gates + t0 * p.k,
                                        exactSigmoid, lists, drops, left);
    } else if (f.codeBits == 8) {
      LaneFamilyGroup<0, 8, kStep, 8>(f, x0, group, ids + t0 * p.k, gates + t0 * p.k, exactSigmoid,
                                      lists, drops, left);
    } else {
      LaneFamilyGroup<0, 9, kStep, 8>(f, x0, group, ids + t0 * p.k, gates + t0 * p.k, exactSigmoid,
                                      lists, drops, left);
    }
    left.invalidRaised |= left.rows != 0;  // the exact steps may meet a row's NaN
    for (uint32_t rest = left.rows; rest != 0; rest &= rest - 1) {
      const int32_t i = __builtin_ctz(rest);
      const int64_t t = t0 + int64_t{i} * kStep;
      const float* x = logits + t * n;
      int32_t* rowIds = ids + t * p.k;
      float* rowGates = gates + t * p.k;
      // The per-token screen on the kept groups the kernel found (its margins are on
      // unrounded estimates, and it takes more candidates), then the exact steps; straight
      // to them when the kept groups are unknown.
      Screened screened;
      screened.ok = false;
      if (((left.groupsUnknown >> i) & 1) == 0) {
        uint32_t kept = 0;
        for (int32_t g = 0; g < f.groups; ++g) kept |= ((left.keptGroup[g] >> i) & 1u) << g;
        screened.ok = ScreenKnownGroups(p, setup, x, kept, left.floor[i], scratch, screened) &&
                      ScreenCount(d, setup, scratch, screened);
      }
      FinishScreened(d, p, setup, x, scratch, screened, rowIds, rowGates);
    }
  });
}
#endif

void Rows(const FamilyParams& p, const float* logits, int64_t rows, int32_t* ids, float* gates,
          bool allowScreen) {
  const D d;
  const RowsSetup setup(d, p, allowScreen);
  const int32_t n = p.experts;
  const size_t padded = PaddedSize(n, static_cast<size_t>(setup.lanes));
  std::vector<FamilyScratch> scratch;
  scratch.reserve(kBlock);
  for (int64_t i = 0; i < kBlock; ++i) scratch.emplace_back(p, padded);
  bool ok[kBlock];
#if MOE_FAMILY_SCREEN
  if (setup.screen) {
#if MOE_LANE_FAMILY
    LaneFamily lanes;
    if (lanes.setUp(p, setup.delta, setup.maxBias)) {
      LaneFamilyRows(d, p, setup, lanes, logits, rows, ids, gates, scratch[0]);
      return;
    }
#endif
    ScreenedRows(d, p, setup, logits, rows, ids, gates, scratch.data());
    return;
  }
#endif
  for (int64_t t0 = 0; t0 < rows; t0 += kBlock) {
    const int64_t block = std::min(kBlock, rows - t0);
    for (int64_t i = 0; i < block; ++i) {
      ok[i] = ScoresAndKeys(d, p, logits + (t0 + i) * n, scratch[i]);
    }
    if (p.groups > 1) {
      for (int64_t i = 0; i < block; ++i) {
        ok[i] = ok[i] && KeepGroups(d, p, setup, scratch[i]);
      }
    }
    for (int64_t i = 0; i < block; ++i) {
      int32_t* rowIds = ids + (t0 + i) * p.k;
      float* rowGates = gates + (t0 + i) * p.k;
      if (ok[i]) {
        SelectAndWrite(d, p, setup, scratch[i], rowIds, rowGates);
      } else {
        writeNonfiniteRow(p.k, setup.kk, rowIds, rowGates);
      }
    }
  }
}

}  // namespace family

void FamilyRows(const FamilyParams& p, const float* logits, int64_t rows, int32_t* ids,
                float* gates) {
  family::Rows(p, logits, rows, ids, gates, true);
}

#if MOE_FAMILY_SCREEN
// For the tests: the rows without the screen (every score exact), which the screened rows
// must equal bit for bit; and the two sigmoids element-wise, for the estimate's bound.
void FamilyRowsUnscreened(const FamilyParams& p, const float* logits, int64_t rows, int32_t* ids,
                          float* gates) {
  family::Rows(p, logits, rows, ids, gates, false);
}
void FamilySigmoidArray(const float* in, float* out, size_t n) {
  const D d;
  for (size_t i = 0; i < n; i += 16) {
    const auto m = static_cast<__mmask16>(n - i >= 16 ? 0xFFFF : (1u << (n - i)) - 1);
    const V x{_mm512_maskz_loadu_ps(m, in + i)};
    _mm512_mask_storeu_ps(out + i, m, family::Sigmoid(d, x).raw);
  }
}
void SigmoidEstimateArray(const float* in, float* out, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    const auto m = static_cast<__mmask16>(n - i >= 16 ? 0xFFFF : (1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(out + i, m, SigmoidEstimate(_mm512_maskz_loadu_ps(m, in + i)));
  }
}
#endif

}  // namespace HWY_NAMESPACE
}  // namespace moe::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace moe::detail {

MOE_DOORS(FamilyRows, MOE_FAMILY_ROWS, autoFamilyRows, avx2FamilyRows, avx512FamilyRows)
MOE_BY_NAME(avx512FamilyRowsUnscreened, HWY_CHOOSE_AVX3(FamilyRowsUnscreened), MOE_FAMILY_ROWS)
MOE_BY_NAME(avx512FamilySigmoid, HWY_CHOOSE_AVX3(FamilySigmoidArray), MOE_ARRAY)
MOE_BY_NAME(avx512SigmoidEstimate, HWY_CHOOSE_AVX3(SigmoidEstimateArray), MOE_ARRAY)

}  // namespace moe::detail
#endif  // HWY_ONCE
