#include "moe/fuzz/mutate.hpp"

#include <algorithm>
#include <cmath>

#include "moe/fuzz/float_bits.hpp"

namespace moe::fuzz {

namespace {

// Reshapes to E' experts / T' tokens, keeping the overlapping logits and filling new
// ones with copies of existing values (ties are the interesting inputs).
void reshape(Case& c, int32_t experts, int32_t tokens, int32_t maxExperts) {
  experts = std::clamp(experts, 1, maxExperts);
  tokens = std::clamp(tokens, 1, std::max(1, std::min(kMaxTokens, kMaxLogits / experts)));
  std::vector<float> out(static_cast<size_t>(tokens) * experts);
  for (int32_t t = 0; t < tokens; ++t) {
    for (int32_t e = 0; e < experts; ++e) {
      int32_t st = t % c.tokens, se = e % c.experts;
      out[static_cast<size_t>(t) * experts + e] =
          c.logits[static_cast<size_t>(st) * c.experts + se];
    }
  }
  c.experts = experts;
  c.tokens = tokens;
  c.logits = std::move(out);
  c.k = std::min(c.k, experts + 1);
  c.split = std::min(c.split, tokens);
}

}  // namespace

void mutateCase(Case& c, ByteSource& src, int32_t maxExperts) {
  maxExperts = std::clamp(maxExperts, 1, kMaxExperts);
  const int count = 1 + src.u8() % 4;
  for (int n = 0; n < count; ++n) {
    const size_t size = c.logits.size();
    const size_t at = src.u32() % size;
    const size_t rowStart = at - at % c.experts;
    switch (src.u8() % 10) {
      case 0: {
        auto pool = specialPool();
        c.logits[at] = pool[src.u8() % pool.size()];
        break;
      }
      case 1:  // copy: an exact tie inside the row
        c.logits[at] = c.logits[rowStart + src.u16() % c.experts];
        break;
      case 2:  // ±1 ulp of another logit in the row: a near-tie
        c.logits[at] = (src.u8() & 1) ? nextUp(c.logits[rowStart + src.u16() % c.experts])
                                      : nextDown(c.logits[rowStart + src.u16() % c.experts]);
        break;
      case 3:  // constant row
        std::fill(c.logits.begin() + rowStart, c.logits.begin() + rowStart + c.experts,
                  c.logits[at]);
        break;
      case 4:  // the other zero / the negation
        c.logits[at] = -c.logits[at];
        break;
      case 5:
        c.logits[at] = floatOf(src.u32());
        if (std::isnan(c.logits[at]) && !c.allowNaN) c.logits[at] = 0.0f;
        break;
      case 6:
        c.k = src.u16() % (c.experts + 2);
        break;
      case 7: {
        static constexpr int32_t kEdges[] = {1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65};
        int32_t e =
            (src.u8() & 1) ? kEdges[src.u8() % std::size(kEdges)] : 1 + src.u16() % maxExperts;
        reshape(c, e, c.tokens, maxExperts);
        break;
      }
      case 8: {
        // T drawn as the decoder draws it (docs/fuzz.md): 1..8, one time in 16 1..64. A
        // uniform 1..64 here made the mean batch ~22 tokens in a grown corpus, where the
        // decoder's layout means ~5: each token costs two router runs and a verdict.
        const uint8_t t8 = src.u8();
        const int32_t tokens = (t8 & 15) == 0 ? 1 + src.u8() % kMaxTokens : 1 + t8 % 8;
        reshape(c, c.experts, tokens, maxExperts);
        break;
      }
      default: {
        static constexpr int32_t kThreads[] = {0, 1, 2, 3, 4};
        c.threads = kThreads[src.u8() % 5];
        c.split = src.u8() % (c.tokens + 1);
        c.variant = src.u8();
        break;
      }
    }
  }
}

}  // namespace moe::fuzz
