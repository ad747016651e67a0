// drawModelLogits (model_logits.hpp). No transcendental function: a seed draws the same
// bits on every libm.
#include "moe/fuzz/model_logits.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

#include "moe/fuzz/float_bits.hpp"

namespace moe::fuzz {

namespace {

// A standard normal, near enough for a router's logits: the sum of four uniforms (Irwin-Hall,
// the four u16 of one u64), centred and scaled to variance 1; tails end at +-3.46.
double gaussian(uint64_t bits) {
  double sum = 0;
  for (int i = 0; i < 4; ++i) sum += static_cast<double>((bits >> (16 * i)) & 0xffff);
  constexpr double kHalfRange = 65535.0 / 2.0;
  constexpr double kSqrt3 = 1.7320508075688772;
  return (sum - 4 * kHalfRange) * kSqrt3 / 65536.0;
}

// Rounds to `keep` fraction bits, to nearest, ties to even (as a bf16 (7) or fp16 (10)
// matmul output converts); finite values of a router's range only.
float roundFraction(float x, int keep) {
  const int drop = 23 - keep;
  uint32_t b = bitsOf(x);
  b += ((uint32_t{1} << (drop - 1)) - 1) + ((b >> drop) & 1);
  return floatOf(b & ~((uint32_t{1} << drop) - 1));
}

// A tie where it decides the routing: the k-th best against the next (an exact tie, or one
// ulp apart either way), or the best two (the order of the slots and their gates).
template <class Source>
void plantTie(Source& src, std::span<float> row, int32_t k) {
  const auto E = static_cast<int32_t>(row.size());
  if (E < 2) return;
  const int32_t top = std::min(E, std::max(k, 1) + 1);
  std::vector<int32_t> order(static_cast<size_t>(E));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + top, order.end(),
                    [&](int32_t a, int32_t b) { return row[a] > row[b]; });
  const bool boundary = k >= 1 && k < E;
  const int32_t kept = boundary ? order[static_cast<size_t>(k - 1)] : order[0];
  const int32_t next = boundary ? order[static_cast<size_t>(k)] : order[1];
  switch (src.u8() % 4) {
    case 0:
    case 1:
      row[next] = row[kept];
      break;
    case 2:
      row[next] = nextUp(row[kept]);
      break;
    default:
      row[next] = nextDown(row[kept]);
      break;
  }
}

// A template over the byte reader: the campaign's SeededSource inlined, or any ByteSource.
template <class Source>
void fillModelLogits(Source& src, Case& c) {
  c.logits.assign(static_cast<size_t>(c.tokens) * static_cast<size_t>(c.experts), 0.0f);
  if (c.tokens == 0 || c.experts == 0) return;
  static constexpr double kSpreads[] = {0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 8.0};
  static constexpr double kExpertBias[] = {0.0, 0.25, 0.5, 1.0};
  const double spread = kSpreads[src.u8() % std::size(kSpreads)];
  const double expertSpread = spread * kExpertBias[src.u8() % std::size(kExpertBias)];
  const double shift = (static_cast<int>(src.u8()) - 128) / 32.0;  // -4 to 4
  const uint8_t format = src.u8();
  const int keep = format < 64 ? 7 : format < 96 ? 10 : 23;  // bf16 1 in 4, fp16 1 in 8
  const bool plant = src.u8() < 128;
  std::vector<double> expertBias(static_cast<size_t>(c.experts));
  for (double& b : expertBias) b = shift + expertSpread * gaussian(src.u64());
  for (int32_t t = 0; t < c.tokens; ++t) {
    const std::span<float> row(c.logits.data() + static_cast<size_t>(t) * c.experts,
                               static_cast<size_t>(c.experts));
    for (size_t e = 0; e < row.size(); ++e) {
      const auto x = static_cast<float>(expertBias[e] + spread * gaussian(src.u64()));
      row[e] = keep < 23 ? roundFraction(x, keep) : x;
    }
    if (plant && src.u8() < 128) plantTie(src, row, c.k);
  }
}

}  // namespace

void drawModelLogits(ByteSource& src, Case& c) {
  if (auto* seeded = dynamic_cast<SeededSource*>(&src)) {
    fillModelLogits(*seeded, c);
  } else {
    fillModelLogits(src, c);
  }
}

}  // namespace moe::fuzz
