// moe_route_v2's argument checks (route_abi.h, in its order) and its threads over tokens,
// shared by every built-in router. As for v1, each row is computed by the same code
// whatever chunk it lands in: bitwise independent of the thread count.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "moe/detail/route_kernels.hpp"
#include "moe/route_abi.h"

namespace moe::detail {
namespace {

bool bytesFit(int64_t a, int64_t b) {
  constexpr uint64_t kMaxBytes = uint64_t{1} << 48;
  return static_cast<uint64_t>(a) * static_cast<uint64_t>(b) <= kMaxBytes / sizeof(float);
}

// The family's domain (Spec.MoE.paramsValid): G >= 1 dividing E (any G when E = 0),
// 1 <= topk_groups <= G, top-2 sums need groups of two or more, enums in range, a finite
// scale. group_score is only read when there are groups.
bool familyFieldsValid(const moe_route_params_v2& p) {
  if (p.score != MOE_SCORE_SOFTMAX && p.score != MOE_SCORE_SIGMOID) return false;
  if (p.renormalize != 0 && p.renormalize != 1) return false;
  if (!std::isfinite(p.scale)) return false;
  if (p.groups < 1 || p.experts % p.groups != 0) return false;
  if (p.topk_groups < 1 || p.topk_groups > p.groups) return false;
  if (p.groups > 1) {
    if (p.group_score != MOE_GROUP_MAX && p.group_score != MOE_GROUP_TOP2_SUM) return false;
    if (p.group_score == MOE_GROUP_TOP2_SUM && p.experts / p.groups < 2) return false;
  }
  return true;
}

}  // namespace

int checkParamsV2(const moe_route_params_v2* p, const float* logits, const int32_t* ids,
                  const float* gates, FamilyParams* out) {
  if (p == nullptr) return MOE_ROUTE_ENULL;
  // Nothing past struct_size may be read: a shorter struct is an older or foreign caller.
  if (p->struct_size < sizeof(moe_route_params_v2)) return MOE_ROUTE_EBADPARAMS;
  if (p->tokens < 0 || p->experts < 0 || p->k < 0) return MOE_ROUTE_EBADSIZE;
  if (!familyFieldsValid(*p)) return MOE_ROUTE_EBADPARAMS;
  const int64_t logitCount = int64_t{p->tokens} * p->experts;
  const int64_t slotCount = int64_t{p->tokens} * p->k;
  if ((logitCount > 0 && logits == nullptr) ||
      (slotCount > 0 && (ids == nullptr || gates == nullptr))) {
    return MOE_ROUTE_ENULL;
  }
  if (!bytesFit(p->tokens, p->experts) || !bytesFit(p->tokens, p->k)) return MOE_ROUTE_EOVERFLOW;
  out->experts = p->experts;
  out->k = p->k;
  out->sigmoid = p->score == MOE_SCORE_SIGMOID;
  out->bias = p->bias;
  out->groups = p->groups;
  out->topkGroups = p->topk_groups;
  out->top2Sum = p->groups > 1 && p->group_score == MOE_GROUP_TOP2_SUM;
  out->renormalize = p->renormalize == 1;
  out->scale = p->scale;
  return MOE_ROUTE_OK;
}

int runRowsV2(FamilyRowsFn rows, const moe_route_params_v2* p, const float* logits, int32_t* ids,
              float* gates, int32_t threads) {
  FamilyParams fp;
  if (const int rc = checkParamsV2(p, logits, ids, gates, &fp); rc != 0) return rc;
  if (threads < 0) return MOE_ROUTE_EBADSIZE;
  const int32_t tokens = p->tokens;
  const int32_t k = fp.k;
  if (tokens == 0 || k == 0) return MOE_ROUTE_OK;
  if (fp.experts == 0) {
    std::fill(ids, ids + int64_t{tokens} * k, -1);
    std::fill(gates, gates + int64_t{tokens} * k, 0.0f);
    return MOE_ROUTE_OK;
  }
  const int32_t experts = fp.experts;
  return runChunks(tokens, experts, threads, [&](int64_t begin, int64_t end) {
    rows(fp, logits + begin * experts, end - begin, ids + begin * k, gates + begin * k);
  });
}

}  // namespace moe::detail
