// The vectorised routers: one fused pass per token with Highway, compiled for every
// x86 target (foreach_target) and callable per target by name or by dynamic dispatch.
//
// Per token, probabilities mode: max (and a NaN check), exp(x - max) with Highway's Exp
// and a lane-wise sum, one division per expert, top-k on the probabilities, and the
// renormalisation by the kept sum in index order. Logits mode: lane-wise max (and a NaN
// check), top-k on the logits, then k exponentials, a lane-wise sum and k divisions.
// Summation orders depend only on E, k and the target, so a token's result is bitwise
// independent of its batch. Top-k: the fast path below, else SelectTopKVector, else
// (k > kInsertionTopKMax) partial_sort. On AVX-512, 17 <= E <= 512 with k <= 8, and
// 257 <= E <= 512 with k <= 16, go to the token-parallel sorting network
// (lane_network-inl.h), and other small shapes to the token-parallel lists
// (token_lanes-inl.h); both hand their undecided rows to the above.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "route_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// foreach_target re-includes this file once per target, before highway.h.
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "fast_exp-inl.h"
#include "lane_network-inl.h"
#include "moe/detail/route_kernels.hpp"
#include "simd_blocks-inl.h"
#include "small_rows-inl.h"
#include "token_lanes-inl.h"
#include "topk_select.hpp"

HWY_BEFORE_NAMESPACE();
namespace moe::detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

HWY_INLINE uint64_t MaskBits(D d, hn::Mask<D> m) {
  uint8_t bytes[8] = {0};
  hn::StoreMaskBits(d, m, bytes);
  uint64_t bits;
  std::memcpy(&bits, bytes, sizeof(bits));
  return bits;
}

// Top-k selection over v[0..n) into `top` (capacity kk <= kInsertionTopKMax). Elements
// 0..kk-1 are inserted first; then each block is compared with the current threshold in
// one vector compare and only lanes strictly above it are inserted, in index order, so
// exact ties keep the lower index. Returns whether any element was NaN.
HWY_INLINE bool SelectTopKVector(D d, const float* v, int32_t n, TopList& top) {
  const int32_t kk = top.cap;
  const size_t lanes = hn::Lanes(d);
  for (int32_t i = 0; i < kk; ++i) top.insertLater(v[i], i);
  V nanLanes = hn::Zero(d);
  for (int32_t b = 0; b < n; b += static_cast<int32_t>(lanes)) {
    const V x = LoadBlock(d, v, b, n);
    nanLanes = hn::Or(nanLanes, hn::VecFromMask(d, hn::IsNaN(x)));
    uint64_t bits = MaskBits(d, hn::Gt(x, hn::Set(d, top.threshold())));
    if (b < kk) bits &= (kk - b >= 64) ? 0 : ~((uint64_t{1} << (kk - b)) - 1);
    while (bits != 0) {
      const int32_t i = b + static_cast<int32_t>(__builtin_ctzll(bits));
      bits &= bits - 1;
      if (v[i] > top.threshold()) top.insertLater(v[i], i);
    }
  }
  return !hn::AllFalse(d, hn::MaskFromVec(nanLanes));
}

bool AnyNaN(D d, const float* v, int32_t n) {
  V nanLanes = hn::Zero(d);
  for (int32_t b = 0; b < n; b += static_cast<int32_t>(hn::Lanes(d))) {
    const V x = LoadBlock(d, v, b, n);
    nanLanes = hn::Or(nanLanes, hn::VecFromMask(d, hn::IsNaN(x)));
  }
  return !hn::AllFalse(d, hn::MaskFromVec(nanLanes));
}

// Per-chunk working memory: probabilities (padded to whole vectors), and kept lists
// for k beyond the insertion list.
struct Scratch {
  std::vector<float> probs;
  std::vector<float> keptVals;
  std::vector<int32_t> keptIds;
  std::vector<float> keptExps;
  Rotations rotations;
  // Candidates of the fast selection; two vectors' room (CompressStore may write a
  // whole vector past the last candidate).
  HWY_ALIGN float candVals[2 * kMaxLanes] = {};
  HWY_ALIGN int32_t candIds[2 * kMaxLanes] = {};
  Scratch(D d, int32_t experts, int32_t k) : rotations(hn::Lanes(d)) {
    const int32_t kk = std::min(k, experts);
    probs.resize(PaddedSize(experts, hn::Lanes(d)));
    if (kk > kInsertionTopKMax) {
      keptVals.resize(static_cast<size_t>(kk));
      keptIds.resize(static_cast<size_t>(kk));
      keptExps.resize(PaddedSize(kk, hn::Lanes(d)));
    }
  }
};

// --- Fast top-k for kk <= lanes / 2 (or rows of at most one vector) -------------------
// Every top-k element is >= T, the kk-th largest of the lane-wise maxima (kk lanes hold a
// maximum >= T, each a distinct element). Typically ~10 elements pass (E = 64 or 256,
// k = 8, 16 lanes); they are compressed in index order and ranked in one vector by
// counting how many candidates beat each one. k = 1 is an argmax. More candidates than
// lanes: the caller falls back to SelectTopKVector.

#if HWY_TARGET == HWY_AVX2
// Highway 1.0.3's AVX2 CompressStore copies its 1 KiB lookup table onto the stack on
// every call (a function-local constexpr array); this static table of lane permutations
// (mask -> the set lanes first, in order) does the same job without the copy.
struct Compress8Table {
  int32_t lanes[256][8];
};
constexpr Compress8Table MakeCompress8Table() {
  Compress8Table table{};
  for (int mask = 0; mask < 256; ++mask) {
    int next = 0;
    for (int lane = 0; lane < 8; ++lane) {
      if ((mask >> lane) & 1) table.lanes[mask][next++] = lane;
    }
  }
  return table;
}
alignas(32) constexpr Compress8Table kCompress8 = MakeCompress8Table();
#endif

// Stores the lanes of v and of its indices that are set in `pass`, first, in order; may
// write a whole vector at vals/ids.
HWY_INLINE void CompressCandidates(D d, V v, hn::Mask<D> pass, int32_t firstIndex, float* vals,
                                   int32_t* ids) {
  const hn::RebindToSigned<D> di;
#if HWY_TARGET == HWY_AVX2
  const int32_t* perm = kCompress8.lanes[MaskBits(d, pass)];
  hn::StoreU(hn::TableLookupLanes(v, hn::SetTableIndices(d, perm)), d, vals);
  hn::StoreU(hn::Add(hn::LoadU(di, perm), hn::Set(di, firstIndex)), di, ids);
#else
  hn::CompressStore(v, pass, d, vals);
  hn::CompressStore(hn::Iota(di, firstIndex), hn::RebindMask(di, pass), di, ids);
#endif
}

// Compresses the elements >= t of v[0..n) and their indices, in index order, into the
// scratch candidates. Returns their count, or -1 when more than one vector's worth.
HWY_INLINE int32_t GatherCandidates(D d, const float* v, int32_t n, float t, Scratch& scratch) {
  const int32_t lanes = static_cast<int32_t>(hn::Lanes(d));
  const V vt = hn::Set(d, t);
  int32_t count = 0;
  for (int32_t b = 0; b < n; b += lanes) {
    auto pass = hn::Ge(LoadBlock(d, v, b, n), vt);
    if (n - b < lanes) pass = hn::And(pass, hn::FirstN(d, static_cast<size_t>(n - b)));
    const auto passing = static_cast<int32_t>(hn::CountTrue(d, pass));
    if (count + passing > lanes) return -1;
    CompressCandidates(d, LoadBlock(d, v, b, n), pass, b, scratch.candVals + count,
                       scratch.candIds + count);
    count += passing;
  }
  return count;
}

// Ranks `count` candidates (in index order) by the routing rule (RankInIndexOrder) and
// writes the best kk. Also returns the sum of the kept values in index order (the
// candidates' order), from 0: Mixtral's renormaliser. Adding +0 for the others changes no
// bit (values >= +0 in probs mode, where the sum is used).
HWY_INLINE float RankCandidates(D d, int32_t count, int32_t kk, const Scratch& scratch,
                                int32_t* keptIds, float* keptVals) {
  const hn::RebindToSigned<D> di;
  const auto rank =
      RankInIndexOrder(d, LoadFirst(d, scratch.candVals, count), scratch.candVals, count);
  // Ranks of the candidates are a permutation of 0..count-1: invert it straight into the
  // kept lists (kMaxLanes long; slots kk..count-1 receive the displaced candidates).
  HWY_ALIGN int32_t ranks[kMaxLanes];
  hn::Store(rank, di, ranks);
  float keptSum = 0.0f;
  for (int32_t i = 0; i < count; ++i) {
    keptIds[ranks[i]] = scratch.candIds[i];
    keptVals[ranks[i]] = scratch.candVals[i];
    keptSum += ranks[i] < kk ? scratch.candVals[i] : 0.0f;
  }
  return keptSum;
}

bool UsesFastSelect(D d, int32_t n, int32_t kk) {
  const auto lanes = static_cast<int32_t>(hn::Lanes(d));
  return lanes >= 4 && (n <= lanes || 2 * kk <= lanes);
}

// Fast selection of the kk best of v[0..n) (no NaN) into keptIds/keptVals, which hold
// kMaxLanes entries; laneMax = lane-wise max over the blocks of v. Returns false when too
// many candidates pass the threshold.
HWY_INLINE bool SelectTopKFast(D d, const float* v, int32_t n, int32_t kk, V laneMax,
                               Scratch& scratch, int32_t* keptIds, float* keptVals,
                               float* keptSumInIndexOrder = nullptr) {
  const hn::RebindToSigned<D> di;
  if (kk == 1) {  // argmax: the first element equal to the largest lane maximum
    const float best = hn::GetLane(hn::MaxOfLanes(d, laneMax));
    const auto lanes = static_cast<int32_t>(hn::Lanes(d));
    for (int32_t b = 0; b < n; b += lanes) {
      auto hit = hn::Eq(LoadBlock(d, v, b, n), hn::Set(d, best));
      if (n - b < lanes) hit = hn::And(hit, hn::FirstN(d, static_cast<size_t>(n - b)));
      const intptr_t lane = hn::FindFirstTrue(d, hit);
      if (lane >= 0) {
        keptIds[0] = b + static_cast<int32_t>(lane);
        keptVals[0] = v[keptIds[0]];
        if (keptSumInIndexOrder != nullptr) *keptSumInIndexOrder = 0.0f + keptVals[0];
        return true;
      }
    }
  }
  int32_t count = n;
  if (n <= static_cast<int32_t>(hn::Lanes(d))) {
    hn::Store(LoadBlock(d, v, 0, n), d, scratch.candVals);
    hn::Store(hn::Iota(di, 0), di, scratch.candIds);
  } else {
    const float t = KthLargestLane(d, laneMax, kk, scratch.rotations);
    count = GatherCandidates(d, v, n, t, scratch);
    if (count < 0) return false;
  }
  const float keptSum = RankCandidates(d, count, kk, scratch, keptIds, keptVals);
  if (keptSumInIndexOrder != nullptr) *keptSumInIndexOrder = keptSum;
  return true;
}

// The lane-wise max of x[0..n) into laneMax; returns whether some element is NaN.
HWY_INLINE bool LaneMaxAndNaN(D d, const float* x, int32_t n, V& laneMax) {
  const auto lanes = static_cast<int32_t>(hn::Lanes(d));
  laneMax = hn::Set(d, kNegInf);
  V nanLanes = hn::Zero(d);
  for (int32_t b = 0; b < n; b += lanes) {
    const V xb = LoadBlock(d, x, b, n);
    laneMax = hn::Max(laneMax, xb);
    nanLanes = hn::Or(nanLanes, hn::VecFromMask(d, hn::IsNaN(xb)));
  }
  return !hn::AllFalse(d, hn::MaskFromVec(nanLanes));
}

void ProbsRow(D d, const float* x, int32_t experts, int32_t k, int32_t* ids, float* gates,
              Scratch& scratch) {
  const int32_t kk = std::min(k, experts);
  const int32_t lanes = static_cast<int32_t>(hn::Lanes(d));
  V vmax;
  const bool nan = LaneMaxAndNaN(d, x, experts, vmax);
  const float m = hn::GetLane(hn::MaxOfLanes(d, vmax));
  // NaN, +inf, or all -inf: the spec's probabilities are all NaN.
  if (nan || !std::isfinite(m)) {
    writeNonfiniteRow(k, kk, ids, gates);
    return;
  }
  float* p = scratch.probs.data();
  const V vm = hn::Set(d, m);
  V acc = hn::Zero(d);
  V laneMaxE = hn::Zero(d);
  for (int32_t b = 0; b < experts; b += lanes) {
    const V e = hn::Exp(d, hn::Sub(LoadBlock(d, x, b, experts), vm));
    hn::StoreU(e, d, p + b);
    acc = hn::Add(acc, e);
    laneMaxE = hn::Max(laneMaxE, e);
  }
  const V vsum = hn::SumOfLanes(d, acc);
  for (int32_t b = 0; b < experts; b += lanes) {
    hn::StoreU(hn::Div(hn::LoadU(d, p + b), vsum), d, p + b);
  }
  int32_t fastIds[kMaxLanes];
  float fastVals[kMaxLanes];
  // Division by the sum rounds monotonically, so it maps lane maxima to lane maxima.
  float keptSum;
  if (UsesFastSelect(d, experts, kk) && SelectTopKFast(d, p, experts, kk, hn::Div(laneMaxE, vsum),
                                                       scratch, fastIds, fastVals, &keptSum)) {
    // As renormaliseKept: the kept sum in index order, one division per gate.
    for (int32_t s = 0; s < kk; ++s) {
      ids[s] = fastIds[s];
      gates[s] = fastVals[s] / keptSum;
    }
  } else if (kk <= kInsertionTopKMax) {
    TopList top;
    top.cap = kk;
    SelectTopKVector(d, p, experts, top);
    renormaliseKept(top.idx, top.val, kk, ids, gates);
  } else {
    selectTopKScalar(p, experts, kk, scratch.keptIds.data(), scratch.keptVals.data());
    renormaliseKept(scratch.keptIds.data(), scratch.keptVals.data(), kk, ids, gates);
  }
  clearEmptySlots(k, kk, ids, gates);
}

// Softmax over the kept logits (best first): m = the best, exps lane-wise into `exps`
// (padded to whole vectors), sum in rank order, one division each.
void SoftmaxKept(D d, const int32_t* keptIds, const float* keptVals, int32_t kk, float* exps,
                 int32_t* ids, float* gates) {
  const float m = keptVals[0];
  if (!std::isfinite(m)) {  // a +inf logit, or every logit -inf: inf - inf is NaN
    for (int32_t s = 0; s < kk; ++s) {
      ids[s] = keptIds[s];
      gates[s] = std::numeric_limits<float>::quiet_NaN();
    }
    return;
  }
  if (kk == 1) {  // exp(0) / exp(0): exactly what the general path below computes
    ids[0] = keptIds[0];
    gates[0] = 1.0f;
    return;
  }
  const V vm = hn::Set(d, m);
  const auto lanes = static_cast<int32_t>(hn::Lanes(d));
  V acc = hn::Zero(d);
  for (int32_t b = 0; b < kk; b += lanes) {
    const V e = hn::Exp(d, hn::Sub(LoadBlock(d, keptVals, b, kk), vm));
    hn::StoreU(e, d, exps + b);
    acc = hn::Add(acc, e);
  }
  const V vsum = hn::SumOfLanes(d, acc);  // lane-wise: fixed order for a given kk
  for (int32_t b = 0; b < kk; b += lanes) {
    hn::StoreU(hn::Div(hn::LoadU(d, exps + b), vsum), d, exps + b);
  }
  for (int32_t s = 0; s < kk; ++s) {
    ids[s] = keptIds[s];
    gates[s] = exps[s];
  }
}

// The selection-only slow paths of logits mode (insertion list or partial_sort); writes
// the whole row.
void LogitsRowGeneral(D d, const float* x, int32_t experts, int32_t k, int32_t* ids, float* gates,
                      Scratch& scratch) {
  const int32_t kk = std::min(k, experts);
  if (kk <= kInsertionTopKMax) {
    TopList top;
    top.cap = kk;
    if (SelectTopKVector(d, x, experts, top)) {
      writeNonfiniteRow(k, kk, ids, gates);
      return;
    }
    HWY_ALIGN float exps[kInsertionTopKMax + kMaxLanes];
    SoftmaxKept(d, top.idx, top.val, kk, exps, ids, gates);
  } else {
    if (AnyNaN(d, x, experts)) {
      writeNonfiniteRow(k, kk, ids, gates);
      return;
    }
    selectTopKScalar(x, experts, kk, scratch.keptIds.data(), scratch.keptVals.data());
    SoftmaxKept(d, scratch.keptIds.data(), scratch.keptVals.data(), kk, scratch.keptExps.data(),
                ids, gates);
  }
  clearEmptySlots(k, kk, ids, gates);
}

// Fast-path selection of one row in logits mode (UsesFastSelect). Returns true when the
// kept experts are in keptIds/keptVals and their softmax is still to do; false when the
// row has been written already (a NaN row, or too many candidates for the fast path).
bool LogitsSelectFast(D d, const float* x, int32_t experts, int32_t k, int32_t* ids, float* gates,
                      Scratch& scratch, int32_t* keptIds, float* keptVals) {
  const int32_t kk = std::min(k, experts);
  V laneMax;
  if (LaneMaxAndNaN(d, x, experts, laneMax)) {
    writeNonfiniteRow(k, kk, ids, gates);
    return false;
  }
  if (SelectTopKFast(d, x, experts, kk, laneMax, scratch, keptIds, keptVals)) return true;
  LogitsRowGeneral(d, x, experts, k, ids, gates, scratch);
  return false;
}

#if MOE_LANE_NETWORK
// The rows a token-parallel group hands back (bit i: row t0 + i * step; NaN, +inf, a tie
// zone at a decision), each through the per-token path.
template <bool kProbs>
HWY_INLINE void RouteHandedBack(uint32_t left, int64_t t0, int64_t step, const float* logits,
                                int32_t experts, int32_t k, int32_t* ids, float* gates,
                                Scratch& scratch) {
  const D d;
  for (; left != 0; left &= left - 1) {
    const int64_t t = t0 + __builtin_ctz(left) * step;
    if constexpr (kProbs) {
      ProbsRow(d, logits + t * experts, experts, k, ids + t * k, gates + t * k, scratch);
    } else {
      LogitsRowGeneral(d, logits + t * experts, experts, k, ids + t * k, gates + t * k, scratch);
    }
  }
}

// Groups of kNetworkGroup rows of R blocks through the lane network keeping K
// (lane_network-inl.h); rows of exactly R blocks and at least kLaneStepMinExperts in
// strided runs (ForEachLaneGroup).
template <int R, int K, bool kProbs>
HWY_INLINE void NetworkGroups(const float* logits, int64_t rows, int32_t experts, int32_t k,
                              int32_t* ids, float* gates, Scratch& scratch) {
  const bool whole = experts == 16 * R;
  ForEachLaneGroup(rows, whole && experts >= kLaneStepMinExperts, [&](int64_t t0, auto step) {
    constexpr int kStep = decltype(step)::value;
    const auto group = static_cast<int32_t>(std::min<int64_t>(kNetworkGroup, rows - t0));
    const float* x = logits + t0 * experts;
    uint32_t left = 0;
    if constexpr (kStep > 1) {  // whole groups of whole rows
      left = LaneNetworkGroup<R, K, kProbs, true, kStep>(x, group, experts, k, ids + t0 * k,
                                                         gates + t0 * k);
    } else if (group == kNetworkGroup && whole) {
      left =
          LaneNetworkGroup<R, K, kProbs, true>(x, group, experts, k, ids + t0 * k, gates + t0 * k);
    } else {
      left =
          LaneNetworkGroup<R, K, kProbs, false>(x, group, experts, k, ids + t0 * k, gates + t0 * k);
    }
    RouteHandedBack<kProbs>(left, t0, kStep, logits, experts, k, ids, gates, scratch);
  });
}

#if MOE_SMALL_ROWS
// Rows of 2..16 experts with k = 1 or 2 (UsesSmallRows), in groups of kNetworkGroup
// (small_rows-inl.h); rows of exactly 8 two to a vector. For k = 2 a run of groups is
// selected first and its gates computed after (SmallRowsGates says why); the rows handed
// back are routed last, over what the kernel wrote.
template <int KK, bool kPairs, bool kProbs>
HWY_INLINE void SmallRowsGroups(const float* logits, int64_t rows, int32_t experts, int32_t* ids,
                                float* gates, Scratch& scratch) {
  constexpr int G = kNetworkGroup;
  // Groups a run: the gates pass follows the selection 8 groups behind. Runs of 64 (Zen 5's
  // choice) left the stores of a run's gates to come all at once; on the Intel Xeon of
  // docs/impl.md (T = 65,536, E = 8, k = 2, three interleaved runs) 8 routes 526-531 M
  // tokens/s where 64 routed 466-486 and 16 491-510 (probabilities: 496-504, 446-461,
  // 465-476); with the rows in L1 the three are alike.
  constexpr int kRun = 8;
  alignas(64) float differences[kRun * G];
  uint32_t left[kRun];
  for (int64_t r0 = 0; r0 < rows; r0 += int64_t{kRun} * G) {
    const auto groups = static_cast<int>(std::min<int64_t>(kRun, (rows - r0 + G - 1) / G));
    const auto rowsOf = [&](int g) {
      return static_cast<int32_t>(std::min<int64_t>(G, rows - r0 - int64_t{g} * G));
    };
    for (int g = 0; g < groups; ++g) {
      const int64_t t0 = r0 + int64_t{g} * G;
      const int32_t group = rowsOf(g);
      PrefetchSmallRowsAhead<KK, kPairs>(logits, experts, ids, gates, t0);
      left[g] = group == G ? SmallRowsGroup<KK, kPairs, kProbs, true>(
                                 logits + t0 * experts, group, experts, ids + t0 * KK,
                                 gates + t0 * KK, differences + g * G)
                           : SmallRowsGroup<KK, kPairs, kProbs, false>(
                                 logits + t0 * experts, group, experts, ids + t0 * KK,
                                 gates + t0 * KK, differences + g * G);
    }
    if constexpr (KK == 2) {
      for (int g = 0; g < groups; ++g) {
        const int64_t t0 = r0 + int64_t{g} * G;
        left[g] |= SmallRowsGates<kPairs, kProbs>(differences + g * G, rowsOf(g), gates + t0 * KK);
      }
    }
    for (int g = 0; g < groups; ++g) {
      RouteHandedBack<kProbs>(left[g], r0 + int64_t{g} * G, 1, logits, experts, KK, ids, gates,
                              scratch);
    }
  }
}

// Not inlined: inside ProbsRows, among the other paths, its registers spilled (E = 16,
// k = 1, probabilities: 460 -> 720 M tokens/s out of line).
template <bool kProbs>
HWY_NOINLINE void SmallRows(const float* logits, int64_t rows, int32_t experts, int32_t k,
                            int32_t* ids, float* gates) {
  const D d;
  Scratch scratch(d, experts, k);
  if (k == 1) {
    SmallRowsGroups<1, false, kProbs>(logits, rows, experts, ids, gates, scratch);
  } else if (experts == 8) {
    SmallRowsGroups<2, true, kProbs>(logits, rows, experts, ids, gates, scratch);
  } else {
    SmallRowsGroups<2, false, kProbs>(logits, rows, experts, ids, gates, scratch);
  }
}
#endif

// The network for this E and kk (UsesLaneNetwork): keeping 16 only past 256 experts.
// Inlined into each caller, which then holds one mode's kernels.
template <bool kProbs>
HWY_INLINE void NetworkRows(const float* logits, int64_t rows, int32_t experts, int32_t k,
                            int32_t* ids, float* gates) {
  const D d;
  Scratch scratch(d, experts, k);
  WithNetworkBlocks(experts, [&](auto blocks) {
    constexpr int kBlocks = decltype(blocks)::value;
    if constexpr (kBlocks > 16) {
      if (std::min(k, experts) > 8) {
        NetworkGroups<kBlocks, 16, kProbs>(logits, rows, experts, k, ids, gates, scratch);
        return;
      }
    }
    NetworkGroups<kBlocks, 8, kProbs>(logits, rows, experts, k, ids, gates, scratch);
  });
}
#endif

// The token-parallel kernels, when one takes this shape (E, k, the target): the small rows,
// the lane network, the token-parallel lists, in that order. False when none does.
template <bool kProbs>
HWY_INLINE bool TokenParallelRows(const float* logits, int64_t rows, int32_t experts, int32_t k,
                                  int32_t* ids, float* gates) {
#if MOE_SMALL_ROWS
  if (UsesSmallRows(experts, k)) {
    SmallRows<kProbs>(logits, rows, experts, k, ids, gates);
    return true;
  }
#endif
#if MOE_LANE_NETWORK
  if (UsesLaneNetwork(experts, std::min(k, experts))) {
    NetworkRows<kProbs>(logits, rows, experts, k, ids, gates);
    return true;
  }
#endif
#if MOE_TOKEN_LANES
  if (UsesTokenLanes(experts, std::min(k, experts), kProbs)) {
    if constexpr (kProbs) {
      ProbsLanesRows(logits, rows, experts, k, ids, gates);
    } else {
      LogitsLanesRows(logits, rows, experts, k, ids, gates);
    }
    return true;
  }
#endif
  // Targets with none of them read no argument.
  (void)logits, (void)rows, (void)experts, (void)k, (void)ids, (void)gates;
  return false;
}

void ProbsRows(const float* logits, int64_t rows, int32_t experts, int32_t k, int32_t* ids,
               float* gates) {
  if (TokenParallelRows</*kProbs=*/true>(logits, rows, experts, k, ids, gates)) return;
  const D d;
  Scratch scratch(d, experts, k);
  for (int64_t t = 0; t < rows; ++t) {
    ProbsRow(d, logits + t * experts, experts, k, ids + t * k, gates + t * k, scratch);
  }
}

// Fast path in groups of tokens: first every selection of the group, then every softmax,
// so that one token's exp and division (a long dependency chain) overlap the next ones'.
// Each row is still computed by the same code whatever its group: batch invariant.
void LogitsRows(const float* logits, int64_t rows, int32_t experts, int32_t k, int32_t* ids,
                float* gates) {
  if (TokenParallelRows</*kProbs=*/false>(logits, rows, experts, k, ids, gates)) return;
  const D d;
  Scratch scratch(d, experts, k);
  const int32_t kk = std::min(k, experts);
  if (!UsesFastSelect(d, experts, kk)) {
    for (int64_t t = 0; t < rows; ++t) {
      LogitsRowGeneral(d, logits + t * experts, experts, k, ids + t * k, gates + t * k, scratch);
    }
    return;
  }
  constexpr int64_t kGroup = 8;
  int32_t keptIds[kGroup][kMaxLanes];
  HWY_ALIGN float keptVals[kGroup][kMaxLanes];
  bool pending[kGroup];
  for (int64_t t0 = 0; t0 < rows; t0 += kGroup) {
    const int64_t group = std::min(kGroup, rows - t0);
    for (int64_t i = 0; i < group; ++i) {
      const int64_t t = t0 + i;
      pending[i] = LogitsSelectFast(d, logits + t * experts, experts, k, ids + t * k, gates + t * k,
                                    scratch, keptIds[i], keptVals[i]);
    }
    for (int64_t i = 0; i < group; ++i) {
      if (!pending[i]) continue;
      const int64_t t = t0 + i;
      HWY_ALIGN float exps[kMaxLanes];
      SoftmaxKept(d, keptIds[i], keptVals[i], kk, exps, ids + t * k, gates + t * k);
      clearEmptySlots(k, kk, ids + t * k, gates + t * k);
    }
  }
}

void ExpArray(const float* in, float* out, size_t n) {
  const D d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(hn::Exp(d, hn::LoadU(d, in + i)), d, out + i);
  if (i < n) {
    HWY_ALIGN float buf[kMaxLanes];
    hn::Store(hn::Exp(d, LoadBlock(d, in + i, 0, static_cast<int32_t>(n - i))), d, buf);
    std::memcpy(out + i, buf, (n - i) * sizeof(float));
  }
}

#if MOE_FAST_EXP
// The AVX-512 kernels' own exp (fast_exp-inl.h), element-wise, for its accuracy test.
void FastExpArray(const float* in, float* out, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(out + i, ExpNonPositive(_mm512_loadu_ps(in + i)));
  if (i < n) {
    const auto rest = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(out + i, rest, ExpNonPositive(_mm512_maskz_loadu_ps(rest, in + i)));
  }
}
#endif

const char* TargetName() {
  return hwy::TargetName(HWY_TARGET);
}

}  // namespace HWY_NAMESPACE
}  // namespace moe::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace moe::detail {

// A target is callable when it was compiled in (HWY_TARGETS) and this CPU supports it;
// asked once: SupportedTargets() costs enough to show in a fuzzer's per-call profile.
bool cpuHasAvx2() {
  static const bool has =
      (HWY_TARGETS & HWY_AVX2) != 0 && (hwy::SupportedTargets() & HWY_AVX2) != 0;
  return has;
}
bool cpuHasAvx512() {
  static const bool has =
      (HWY_TARGETS & HWY_AVX3) != 0 && (hwy::SupportedTargets() & HWY_AVX3) != 0;
  return has;
}

MOE_DOORS(ProbsRows, MOE_ROWS, autoProbsRows, avx2ProbsRows, avx512ProbsRows)
MOE_DOORS(LogitsRows, MOE_ROWS, autoLogitsRows, avx2LogitsRows, avx512LogitsRows)
MOE_DOORS(ExpArray, MOE_ARRAY, autoExp, avx2Exp, avx512Exp)
MOE_BY_NAME(avx512FastExp, HWY_CHOOSE_AVX3(FastExpArray), MOE_ARRAY)

HWY_EXPORT(TargetName);
const char* autoTargetName() {
  return HWY_DYNAMIC_DISPATCH(TargetName)();
}

}  // namespace moe::detail
#endif  // HWY_ONCE
