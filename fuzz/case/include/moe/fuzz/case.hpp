// One routing case: a batch of logits plus the knobs that pick the implementation path.
// Decoded ONCE from libFuzzer bytes or generated from a seed (the same decoder, fed by a
// seeded byte stream), then run on every router and judged in one place.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "moe/fuzz/shapes.hpp"

namespace moe::fuzz {

// Shape limits of the byte decoder (the libFuzzer targets): E in [1, 1024], k in [0, E+1],
// T in [1, 64]. The campaign's drawCase goes much further (shapes.hpp).
inline constexpr int32_t kMaxExperts = 1024;
inline constexpr int32_t kMaxTokens = 64;
// tokens * experts is capped so that one case stays cheap (a libFuzzer exec, a campaign
// step); large E then comes with small T.
inline constexpr int32_t kMaxLogits = 4096;

// The routing family's parameters of a moe_route_v2 case (route_abi.h, moe_route_params_v2),
// as the call passes them: raw values, so that a case can also hold parameters outside
// their domain (the fuzzer draws some and requires MOE_ROUTE_EBADPARAMS, nothing written).
struct Family {
  int32_t score = 0;        // MOE_SCORE_SOFTMAX 0, MOE_SCORE_SIGMOID 1
  std::vector<float> bias;  // `experts` values (the same for every token), or empty: NULL
  int32_t groups = 1;       // 1 = no grouping
  int32_t topkGroups = 1;
  int32_t groupScore = 0;   // MOE_GROUP_MAX 0, MOE_GROUP_TOP2_SUM 1
  int32_t renormalize = 1;  // 0 or 1
  float scale = 1.0f;
  int32_t structShort = 0;  // > 0: struct_size this many bytes short of the struct (invalid)
  bool operator==(const Family&) const = default;
};

// Why the family's parameters are outside route_abi.h's domain for E experts (the spec's
// paramsValid, plus the ABI's enums, a finite scale and the full struct_size), or "" when
// they are valid.
std::string familyInvalidReason(const Family& f, int32_t experts);
// The experts a valid family makes eligible: E, or topk_groups * E / groups.
int32_t familyEligible(const Family& f, int32_t experts);
// "sigmoid, bias, G 8 top 4 by top2-sum, renorm, scale 2.5": for reports.
std::string familyText(const Family& f);

struct Case {
  int32_t tokens = 1;
  int32_t experts = 1;
  int32_t k = 1;
  std::vector<float> logits;  // tokens * experts, row-major; bit patterns preserved
  int32_t threads = 1;        // passed to built-in routers (0 = all cores)
  int32_t split = 0;          // batch split point in [0, tokens] for the invariance check
  uint8_t variant = 0;        // modifier channel: which router a multi-router target runs
  bool allowNaN = false;      // NaN logits kept (out-of-domain checks) or replaced
  // The campaign drew the logits like a trained router's (model_logits.hpp), not from the
  // decoder's adversarial values: counted in the coverage summary, not saved with the case.
  bool modelLike = false;
  // A moe_route_v2 case: the family's parameters (absent: a moe_route_v1 case).
  std::optional<Family> family;

  std::span<const float> row(int32_t t) const {
    return {logits.data() + static_cast<size_t>(t) * experts, static_cast<size_t>(experts)};
  }
};

// The degenerate shape class of a case: "empty-batch" (T = 0), "no-experts" (E = 0),
// "k-zero" (k = 0), or "" for a case with tokens, experts and slots. A fault found in one
// class is shrunk within it and reported under a signature of its own, so a crash that only
// an empty batch shows never hides a crash on real shapes.
std::string_view degenerateShape(const Case& c);
// For reports: "an empty batch (T = 0)", "no experts (E = 0)", "k = 0", or "".
std::string_view degenerateShapeText(std::string_view shapeClass);

// Little-endian, low byte first (sequenced: the operands of | are not). Shared by every
// byte reader so the layout is written once.
template <class Source>
uint16_t readU16(Source& src) {
  const uint8_t lo = src.u8();
  return static_cast<uint16_t>(lo | (src.u8() << 8));
}
template <class Source>
uint32_t readU32(Source& src) {
  const uint32_t lo = readU16(src);
  return lo | (static_cast<uint32_t>(readU16(src)) << 16);
}

// Where the decoder's choices come from: libFuzzer bytes (zeros once exhausted) or a PRNG.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint8_t u8() = 0;
  uint16_t u16() { return readU16(*this); }
  uint32_t u32() { return readU32(*this); }
  // Eight bytes, low u32 first; a PRNG gives them in one step (a case of 2^24 logits reads
  // one per model-like logit).
  virtual uint64_t u64() {
    const uint64_t lo = u32();
    return lo | (static_cast<uint64_t>(u32()) << 32);
  }
};

class SpanSource final : public ByteSource {
 public:
  explicit SpanSource(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  uint8_t u8() override { return pos_ < bytes_.size() ? bytes_[pos_++] : 0; }

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

// splitmix64: tiny, fast, and fully determined by the printed seed. Defined here so that the
// generators' loops over a SeededSource (final) inline it: a case may hold 2^24 logits.
class SeededSource final : public ByteSource {
 public:
  explicit SeededSource(uint64_t seed) : state_(seed) {}
  uint64_t next64() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint8_t u8() override {
    if (left_ == 0) {
      buffer_ = next64();
      left_ = 8;
    }
    const auto b = static_cast<uint8_t>(buffer_);
    buffer_ >>= 8;
    --left_;
    return b;
  }
  uint64_t u64() override { return next64(); }

 private:
  uint64_t state_;
  uint64_t buffer_ = 0;
  int left_ = 0;
};

// The decoder (byte layout in docs/fuzz.md). Always yields a valid case. `maxExperts`
// (<= 1024) narrows E for throughput runs (MOE_FUZZ_MAX_EXPERTS in the targets).
Case decodeCase(ByteSource& source, int32_t maxExperts = kMaxExperts);
// The decoder's cap on E: $MOE_FUZZ_MAX_EXPERTS (1..kMaxExperts; the throughput figures in
// docs/fuzz.md use 64), else kMaxExperts. Read once, by the targets and `reproduce` alike, so
// that a reproduced input decodes to the case the target saw.
int32_t maxExpertsFromEnv();
Case decodeCase(std::span<const uint8_t> bytes, int32_t maxExperts = kMaxExperts);
// The campaign's generator (`moe-oracle fuzz`): a shape drawn from `space` (up to E = 4,096,
// T = 65,536, 2^24 logits), most tokens at the shapes of today's models (shape_draw.hpp,
// docs/fuzz.md "Shapes"), and logits drawn like a model's or adversarially as the decoder
// draws them (most rows kept real). Every case lies inside the space.
Case drawCase(ByteSource& source, const ShapeSpace& space);
// Bytes that decode to exactly `c` (used by the structure-keeping custom mutator).
std::vector<uint8_t> encodeCase(const Case& c);

// The binary32 values the generator mixes in: ±0, ±inf, FLT_MAX, the smallest subnormal,
// values around expf's overflow point 88.72, 2^-30 (docs/design.md §1's near-tie), ...
std::span<const float> specialPool();

// A case's logits drawn again for its shape, in the style drawCase drew them (c.modelLike),
// for generators that change the shape after drawCase.
void drawLogits(ByteSource& source, Case& c);

struct Families;  // contract.hpp
// The campaign's generator for a moe_route_v2 router: drawCase's shape and logits, then
// the family's parameters, only from what `families` lists, with the family's adversarial
// structures (tied groups, cancelling and overturning biases, groups of one, k above the
// eligible experts, the shapes of DeepSeek-V3, Kimi K2, Llama 4 and DeepSeek-V2 when the
// space holds them) and, 1 case in 16, parameters outside the domain (docs/fuzz.md).
// The draw follows every restriction of `families` (the values of groups, topk_groups,
// group_score, renormalize and scale, a required bias) or its named recipes, at their shapes.
Case drawFamilyCase(ByteSource& source, const ShapeSpace& space, const Families& families);
// True when `c` is a case the run could have drawn: its shape inside `space` and, for a
// family case with valid parameters, every field one `families` allows (a recipe's, when
// it names recipes). A shrunk case stays inside, so it fits the kernel the user described.
bool caseInside(const Case& c, const ShapeSpace& space, const Families* families);
// Throws std::invalid_argument saying why when no case of `families` fits `space` (a recipe
// whose shapes are outside it, group counts that divide none of its E).
void checkFamiliesDrawable(const Families& families, const ShapeSpace& space);

// The family's JSON inside a case's ("family": {...}); bias and scale as hex32 bits.
nlohmann::json familyToJSON(const Family& f);
Family familyFromJSON(const nlohmann::json& j, int32_t experts);

nlohmann::json caseToJSON(const Case& c);
// Throws std::invalid_argument on a malformed or out-of-limits case.
Case caseFromJSON(const nlohmann::json& j);

}  // namespace moe::fuzz
