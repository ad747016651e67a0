// The family kernel's selection (route_family_simd.cpp) for rows whose keys are exact: the
// kept groups (family_groups-inl.h, or the scalar steps), then the kept experts by a
// threshold that at least kk eligible keys reach, ranking in one vector only the keys at
// or above it (the scalar steps when more pass), and the row's ids and gates as
// family_select.hpp writes them. Re-included once per Highway target by
// route_family_simd.cpp, hence the toggle guard.
#if defined(MOE_IMPL_FAMILY_SELECTION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MOE_IMPL_FAMILY_SELECTION_INL_H_
#undef MOE_IMPL_FAMILY_SELECTION_INL_H_
#else
#define MOE_IMPL_FAMILY_SELECTION_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "family_groups-inl.h"
#include "family_select.hpp"
#include "family_setup-inl.h"
#include "moe/detail/route_kernels.hpp"
#include "simd_blocks-inl.h"

HWY_BEFORE_NAMESPACE();
namespace moe::detail::HWY_NAMESPACE::family {

// Fast selection of the kk best keys among the eligible experts, whose vectors start at
// starts[0..count) (each `span` long, the last clipped to n): every kept key is >= T, a
// value that at least kk eligible keys reach, so only keys >= T are ranked (typically
// ~kk + 2). T is `floor` when given (not NaN) and few enough keys pass it, else the kk-th
// largest lane maximum. Writes keptIds/keptKeys best first; false when more than one
// vector's worth pass T.
HWY_INLINE bool SelectFast(D d, const float* c, int32_t n, const int32_t* starts, int32_t count,
                           int32_t span, int32_t kk, const Rotations& rot, float floor,
                           const float* s, int32_t* keptIds, float* keptKeys, float* keptTotal) {
  const hn::RebindToSigned<D> di;
  const auto lanes = static_cast<int32_t>(hn::Lanes(d));
  const auto lane = hn::Iota(di, 0);
  auto laneMaxOf = [&] {
    V laneMax = hn::Set(d, kNegInf);
    for (int32_t j = 0; j < count; ++j) {
      for (int32_t b = starts[j]; b < std::min(starts[j] + span, n); b += lanes) {
        laneMax = hn::Max(laneMax, LoadBlock(d, c, b, n));
      }
    }
    return laneMax;
  };
  if (kk == 1) {
    // The argmax: the first eligible key equal to the largest (exact ties to the lower
    // index), its score the whole renormalising sum.
    const V best = hn::MaxOfLanes(d, laneMaxOf());
    for (int32_t j = 0; j < count; ++j) {
      for (int32_t b = starts[j]; b < std::min(starts[j] + span, n); b += lanes) {
        auto hit = hn::Eq(LoadBlock(d, c, b, n), best);
        if (n - b < lanes) hit = hn::And(hit, hn::FirstN(d, static_cast<size_t>(n - b)));
        const intptr_t first = hn::FindFirstTrue(d, hit);
        if (first >= 0) {
          keptIds[0] = b + static_cast<int32_t>(first);
          keptKeys[0] = c[keptIds[0]];
          *keptTotal = 0.0f + s[keptIds[0]];
          return true;
        }
      }
    }
    return false;  // unreachable without NaN keys
  }
  // The candidates, in index order, gathered in registers: each vector's passing lanes
  // compressed, then moved to lanes [found, found + passing) (a store of each piece and a
  // reload of the whole stalled on store forwarding). First every vector's count and where
  // its piece starts (a short scalar chain), then the pieces, independent of one another.
  int32_t pieceStart[kMaxVectors + 1];
  auto countPassing = [&](V vt) {  // the candidates' count, or lanes + 1 for too many
    int32_t vectors = 0;
    pieceStart[0] = 0;
    for (int32_t j = 0; j < count; ++j) {
      for (int32_t b = starts[j]; b < std::min(starts[j] + span, n); b += lanes) {
        if (vectors == kMaxVectors) return lanes + 1;
        auto pass = hn::Ge(LoadBlock(d, c, b, n), vt);
        if (n - b < lanes) pass = hn::And(pass, hn::FirstN(d, static_cast<size_t>(n - b)));
        pieceStart[vectors + 1] =
            pieceStart[vectors] + static_cast<int32_t>(hn::CountTrue(d, pass));
        ++vectors;
      }
    }
    return pieceStart[vectors];
  };
  V vt = hn::Set(d, floor);
  int32_t found = floor == floor ? countPassing(vt) : lanes + 1;
  if (found > lanes) {
    vt = hn::Set(d, KthLargestLane(d, laneMaxOf(), kk, rot));
    found = countPassing(vt);
    if (found > lanes) return false;
  }

  V v = hn::Set(d, kNegInf);
  auto vIds = hn::Zero(di);
  int32_t piece = 0;
  for (int32_t j = 0; j < count; ++j) {
    for (int32_t b = starts[j]; b < std::min(starts[j] + span, n); b += lanes, ++piece) {
      const int32_t at = pieceStart[piece];
      const int32_t passing = pieceStart[piece + 1] - at;
      if (passing == 0) continue;
      const V x = LoadBlock(d, c, b, n);
      auto pass = hn::Ge(x, vt);
      if (n - b < lanes) pass = hn::And(pass, hn::FirstN(d, static_cast<size_t>(n - b)));
      const auto from =
          hn::IndicesFromVec(d, hn::And(hn::Sub(lane, hn::Set(di, at)), hn::Set(di, lanes - 1)));
      const auto place =
          hn::RebindMask(d, hn::AndNot(hn::FirstN(di, static_cast<size_t>(at)),
                                       hn::FirstN(di, static_cast<size_t>(at + passing))));
      v = hn::IfThenElse(place, hn::TableLookupLanes(hn::Compress(x, pass), from), v);
      const auto ids = hn::Compress(hn::Iota(di, b), hn::RebindMask(di, pass));
      vIds = hn::IfThenElse(hn::RebindMask(di, place),
                            hn::BitCast(di, hn::TableLookupLanes(hn::BitCast(d, ids), from)), vIds);
    }
  }
  HWY_ALIGN float candKeys[kMaxLanes];
  HWY_ALIGN int32_t candIds[kMaxLanes];
  hn::Store(v, d, candKeys);
  hn::Store(vIds, di, candIds);
  // Each candidate's rank (the candidates are in index order): a permutation of
  // 0..found-1.
  const auto rank = RankInIndexOrder(d, v, candKeys, found);
  HWY_ALIGN int32_t ranks[kMaxLanes];
  hn::Store(rank, di, ranks);
  // Invert the ranks without branches (slots kk..found-1 receive the displaced
  // candidates), then the kept scores' sum in index order, from 0, as the spec
  // renormalises: the kept candidates compressed in their (index) order.
  HWY_ALIGN int32_t slotIds[kMaxLanes];
  HWY_ALIGN float slotKeys[kMaxLanes];
  for (int32_t i = 0; i < found; ++i) {
    slotIds[ranks[i]] = candIds[i];
    slotKeys[ranks[i]] = candKeys[i];
  }
  for (int32_t r = 0; r < kk; ++r) {  // a loop, not a memmove call, for eight
    keptIds[r] = slotIds[r];
    keptKeys[r] = slotKeys[r];
  }
  HWY_ALIGN int32_t byIndex[kMaxLanes];
  hn::Store(hn::Compress(hn::Load(di, candIds), hn::Lt(rank, hn::Set(di, kk))), di, byIndex);
  float total = 0.0f;
  for (int32_t j = 0; j < kk; ++j) total += s[byIndex[j]];
  *keptTotal = total;
  return true;
}

// The kept groups of a row with groups (no NaN key) into scratch.keptGroups; false when a
// group score is NaN (+inf + -inf in a top-2 sum).
HWY_INLINE bool KeepGroups(D d, const FamilyParams& p, const RowsSetup& setup,
                           FamilyScratch& scratch) {
  if (setup.alignedGroups) {
#if MOE_GROUP_NETWORK
    if (setup.network) {
      GroupScoresNetwork(p, *setup.network, scratch);
    } else {
      GroupScoresAligned(d, p, scratch);
    }
#else
    GroupScoresAligned(d, p, scratch);
#endif
  } else {
    const float* c = scratch.keys.data();
    for (int32_t g = 0; g < p.groups; ++g) {
      const float* cg = c + int64_t{g} * setup.size;
      scratch.groupScore[g] =
          p.top2Sum ? groupTop2SumScalar(cg, setup.size) : groupMaxScalar(cg, setup.size);
    }
  }
  bool nan = false;
  for (int32_t g = 0; g < p.groups; ++g) nan |= std::isnan(scratch.groupScore[g]);
  if (nan) return false;
  if (p.groups <= setup.lanes) {
    KeepGroupsVector(d, p, scratch);
  } else {
    keepGroupsScalar(p, scratch);
  }
  return true;
}

// Selects the kept experts of a row whose keys (and kept groups) are ready, and writes its
// ids and gates.
HWY_INLINE void SelectAndWrite(D d, const FamilyParams& p, const RowsSetup& setup,
                               FamilyScratch& scratch, int32_t* rowIds, float* rowGates) {
  const int32_t start = 0;
  const int32_t* spans = &start;
  int32_t spanCount = 1;
  int32_t span = p.experts;
  if (p.groups > 1) {
    for (int32_t j = 0; j < p.topkGroups; ++j) {
      scratch.order[j] = scratch.keptGroups[j] * setup.size;
    }
    spans = scratch.order.data();
    spanCount = p.topkGroups;
    span = setup.size;
  }
  // With the groups' second keys known (the merging network), the least second key of the
  // kept groups is reached by two keys of each kept group: a threshold when that makes kk.
  float floor = std::numeric_limits<float>::quiet_NaN();
#if MOE_GROUP_NETWORK
  if (setup.network && 2 * p.topkGroups >= setup.kk) {
    floor = std::numeric_limits<float>::infinity();
    for (int32_t j = 0; j < p.topkGroups; ++j) {
      floor = std::min(floor, scratch.groupSecond[scratch.keptGroups[j]]);
    }
  }
#endif
  float total;
  if (setup.fastSelect && SelectFast(d, scratch.keys.data(), p.experts, spans, spanCount, span,
                                     setup.kk, setup.rot, floor, scratch.scores.data(),
                                     scratch.keptIds.data(), scratch.keptKeys.data(), &total)) {
    writeFamilyGatesWithTotal(p, scratch.scores.data(), scratch.keptIds.data(), total, rowIds,
                              rowGates);
  } else {
    selectKeptScalar(p, scratch);
    writeFamilyGates(p, scratch.scores.data(), scratch.keptIds.data(), rowIds, rowGates);
  }
}

}  // namespace moe::detail::HWY_NAMESPACE::family
HWY_AFTER_NAMESPACE();

#endif  // toggle
