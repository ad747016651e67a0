#include "moe/fuzz/case.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "moe/fuzz/float_bits.hpp"
#include "moe/fuzz/model_logits.hpp"
#include "moe/fuzz/shape_draw.hpp"

namespace moe::fuzz {

std::span<const float> specialPool() {
  static const std::array<float, 24> pool = {
      0.0f,
      -0.0f,
      std::numeric_limits<float>::infinity(),
      -std::numeric_limits<float>::infinity(),
      std::numeric_limits<float>::max(),
      -std::numeric_limits<float>::max(),
      std::numeric_limits<float>::denorm_min(),
      -std::numeric_limits<float>::denorm_min(),
      std::numeric_limits<float>::min(),
      88.72283935546875f,     // largest x with expf(x) finite
      88.7228469848632812f,   // smallest x with expf(x) = inf
      -87.3365478515625f,     // expf(x) near FLT_MIN: the subnormal boundary
      -103.972076416015625f,  // expf(x) near the smallest subnormal
      0x1p-30f,
      -0x1p-30f,
      1.0f,
      -1.0f,
      0.5f,
      2.0f,
      0x1p-24f,
      16.0f,
      -16.0f,
      100.0f,
      -100.0f};
  return pool;
}

namespace {

// SpanSource's reads without a virtual call per byte, for decodeCase(bytes): the libFuzzer
// path. Under -fsanitize=fuzzer every indirect call and every integer compare of an
// instrumented translation unit is traced; this reader lives here, in case.cpp (built
// without that tracing), rather than inline in a header that the targets include.
class DirectSpanReader {
 public:
  explicit DirectSpanReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  uint8_t u8() { return pos_ < bytes_.size() ? bytes_[pos_++] : 0; }  // zeros once exhausted
  uint16_t u16() { return readU16(*this); }
  uint32_t u32() { return readU32(*this); }

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

// One logit from the op byte (layout in docs/fuzz.md). `row` holds the values so far in
// this token's row, `prevRow` the previous token's row (empty for token 0). A template over
// the byte reader: ByteSource (virtual) or DirectSpanReader.
template <class Source>
float decodeLogit(Source& src, std::span<const float> row, std::span<const float> prevRow,
                  bool allowNaN) {
  uint8_t op = src.u8();
  float x;
  switch (op % 8) {
    case 0:
    case 1:
      x = floatOf(src.u32());  // raw bit pattern: every binade, sign and subnormal
      break;
    case 2:
      x = static_cast<float>(static_cast<int8_t>(src.u8())) / 8.0f;  // small, tie-prone
      break;
    case 3: {
      auto pool = specialPool();
      x = pool[src.u8() % pool.size()];
      // One +inf makes the whole row non-real (only structure is checked there); at E = 64
      // a plain pick left ~40% of tokens non-real, so +inf needs one more byte to agree.
      if (x == std::numeric_limits<float>::infinity() && (src.u8() & 7) != 0) {
        x = std::numeric_limits<float>::max();
      }
      break;
    }
    case 4:  // copy an earlier logit: an exact tie
      x = row.empty() ? 0.0f : row[src.u8() % row.size()];
      break;
    case 5: {  // ±1 ulp of an earlier logit: a near-tie
      float base = row.empty() ? 1.0f : row[src.u8() % row.size()];
      x = (src.u8() & 1) ? nextUp(base) : nextDown(base);
      break;
    }
    case 6:  // same expert in the previous token (or the row's first value: constant rows)
      if (!prevRow.empty()) {
        x = prevRow[row.size()];
      } else {
        x = row.empty() ? 0.0f : row[0];
      }
      break;
    default:  // a value near 88.72 or near a tie at scale: uniform in a moderate range
      x = static_cast<float>(static_cast<int16_t>(src.u16())) / 256.0f;
      break;
  }
  if (std::isnan(x) && !allowNaN) x = std::numeric_limits<float>::max();
  return x;
}

// The logits of every row, one op byte (and its argument bytes) each. Sized once up
// front, so the row spans stay valid while the rows fill in.
template <class Source>
void fillLogits(Source& src, Case& c) {
  c.logits.assign(static_cast<size_t>(c.tokens) * c.experts, 0.0f);
  for (int32_t t = 0; t < c.tokens; ++t) {
    float* start = c.logits.data() + static_cast<size_t>(t) * c.experts;
    std::span<const float> prev;
    if (t > 0) prev = c.row(t - 1);
    for (int32_t e = 0; e < c.experts; ++e) {
      start[e] =
          decodeLogit(src, std::span<const float>(start, static_cast<size_t>(e)), prev, c.allowNaN);
    }
  }
}

// The mod byte: bits 0..2 pick the thread count, bits 3..6 all set allow NaN (1 in 16).
constexpr int32_t kThreads[8] = {1, 1, 2, 2, 3, 4, 0, 1};
void applyModByte(Case& c, uint8_t mod) {
  c.threads = kThreads[mod & 7];
  c.allowNaN = (mod & 0x78) == 0x78;  // 1 case in 16: NaN is out of the domain
}

// t8 at or above this reads T from one more byte (1 case in 16 of random bytes).
constexpr uint8_t kLargeBatchCode = 240;

// Byte layout (docs/fuzz.md):
//   [e8] E = 1 + e8 % 64, or when e8 & 0x80: [u16] E = 1 + u16 % 1024
//   [k]  u8 (u16 when E + 2 > 256), k = value % (E + 2)
//   [t8] T = 1 + t8 % 8 when t8 < 240, else [u8] T = 1 + u8 % 64; capped so T * E <= 4096
//   [mod] bits 0..2 threads (0..7 -> 1,1,2,2,3,4,0,1), bits 3..6 all set: allowNaN
//   [split] u8 % (T + 1)   [variant] u8
//   then T * E logits, each an op byte plus its argument bytes.
template <class Source>
Case decodeFrom(Source& src, int32_t maxExperts) {
  Case c;
  maxExperts = std::clamp(maxExperts, 1, kMaxExperts);
  uint8_t e8 = src.u8();
  c.experts = (e8 & 0x80) ? 1 + src.u16() % maxExperts : 1 + e8 % std::min(64, maxExperts);
  uint32_t kraw = (c.experts + 2 > 256) ? src.u16() : src.u8();
  c.k = static_cast<int32_t>(kraw % static_cast<uint32_t>(c.experts + 2));
  // Mostly small batches: each token costs two router runs and a verdict, so the mean T
  // sets the exec rate. One case in 16 (t8 >= 240) reads T = 1 + u8 % 64 from the next
  // byte, so large batches and every split point still come up (and libFuzzer keeps the
  // ones that reach new coverage).
  const uint8_t t8 = src.u8();
  c.tokens = t8 < kLargeBatchCode ? 1 + t8 % 8 : 1 + src.u8() % kMaxTokens;
  c.tokens = std::max(1, std::min(c.tokens, kMaxLogits / c.experts));
  applyModByte(c, src.u8());
  c.split = src.u8() % (c.tokens + 1);
  c.variant = src.u8();
  fillLogits(src, c);
  return c;
}

}  // namespace

namespace {

// Most adversarial rows stay real: a +inf (the special pool's, or one ulp above FLT_MAX)
// makes the whole row non-real, judged on structure only, and at E = 256 left about 40% of
// the tokens so. One row in 16 keeps what it drew; the others hold FLT_MAX in its place.
// NaN stays where the case allows it (the out-of-domain checks).
void keepRowsMostlyReal(ByteSource& src, Case& c) {
  for (int32_t t = 0; t < c.tokens; ++t) {
    if (src.u8() < 16) continue;
    float* row = c.logits.data() + static_cast<size_t>(t) * c.experts;
    for (int32_t e = 0; e < c.experts; ++e) {
      if (row[e] == std::numeric_limits<float>::infinity()) {
        row[e] = std::numeric_limits<float>::max();
      }
    }
  }
}

}  // namespace

Case drawCase(ByteSource& src, const ShapeSpace& space) {
  const DrawnShape shape = drawShape(src, space);
  Case c;
  c.experts = shape.experts;
  c.k = shape.k;
  c.tokens = shape.tokens;
  c.modelLike = shape.modelLike;
  applyModByte(c, src.u8());
  c.split = static_cast<int32_t>(drawFrom(src, IntSet::range(0, c.tokens)));
  c.variant = src.u8();
  drawLogits(src, c);
  return c;
}

void drawLogits(ByteSource& src, Case& c) {
  if (c.modelLike) {
    drawModelLogits(src, c);
    return;
  }
  // The campaign's stream read without a virtual call per byte: SeededSource is final.
  if (auto* seeded = dynamic_cast<SeededSource*>(&src)) {
    fillLogits(*seeded, c);
  } else {
    fillLogits(src, c);
  }
  keepRowsMostlyReal(src, c);
}

Case decodeCase(ByteSource& src, int32_t maxExperts) {
  return decodeFrom(src, maxExperts);
}

Case decodeCase(std::span<const uint8_t> bytes, int32_t maxExperts) {
  DirectSpanReader src(bytes);
  return decodeFrom(src, maxExperts);
}

int32_t maxExpertsFromEnv() {
  static const int32_t value = [] {
    const char* v = std::getenv("MOE_FUZZ_MAX_EXPERTS");
    const long n = v != nullptr ? std::strtol(v, nullptr, 10) : 0;
    return n > 0 ? static_cast<int32_t>(std::min<long>(n, kMaxExperts)) : kMaxExperts;
  }();
  return value;
}

std::vector<uint8_t> encodeCase(const Case& c) {
  // Sized once and written through a pointer: the custom mutator encodes on every mutation.
  constexpr size_t kMaxHeader = 10, kBytesPerLogit = 5;  // 3 E, 2 k, 2 T, 3 mod-split-variant
  std::vector<uint8_t> out(kMaxHeader + kBytesPerLogit * c.logits.size());
  uint8_t* at = out.data();
  auto put16 = [&](uint32_t v) {
    *at++ = static_cast<uint8_t>(v);
    *at++ = static_cast<uint8_t>(v >> 8);
  };
  *at++ = 0x80;
  put16(static_cast<uint32_t>(c.experts - 1));
  if (c.experts + 2 > 256) {
    put16(static_cast<uint32_t>(c.k));
  } else {
    *at++ = static_cast<uint8_t>(c.k);
  }
  // T <= 8 encodes as T - 1; larger T as the large-batch code, then T - 1.
  if (c.tokens <= 8) {
    *at++ = static_cast<uint8_t>(c.tokens - 1);
  } else {
    *at++ = kLargeBatchCode;
    *at++ = static_cast<uint8_t>(c.tokens - 1);
  }
  uint8_t threadsCode = 0;
  switch (c.threads) {
    case 2:
      threadsCode = 2;
      break;
    case 3:
      threadsCode = 4;
      break;
    case 4:
      threadsCode = 5;
      break;
    case 0:
      threadsCode = 6;
      break;
    default:
      threadsCode = 0;
      break;
  }
  *at++ = static_cast<uint8_t>(threadsCode | (c.allowNaN ? 0x78 : 0));
  *at++ = static_cast<uint8_t>(c.split);
  *at++ = c.variant;
  for (float x : c.logits) {
    *at++ = 0;  // op 0: raw bits
    const uint32_t b = bitsOf(x);
    for (int i = 0; i < 4; ++i) *at++ = static_cast<uint8_t>(b >> (8 * i));
  }
  out.resize(static_cast<size_t>(at - out.data()));
  return out;
}

nlohmann::json caseToJSON(const Case& c) {
  nlohmann::json j;
  j["tokens"] = c.tokens;
  j["experts"] = c.experts;
  j["k"] = c.k;
  j["threads"] = c.threads;
  j["split"] = c.split;
  j["variant"] = c.variant;
  j["allowNaN"] = c.allowNaN;
  auto& l = j["logits"] = nlohmann::json::array();
  for (float x : c.logits) l.push_back(hex32(x));
  if (c.family) j["family"] = familyToJSON(*c.family);
  return j;
}

Case caseFromJSON(const nlohmann::json& j) {
  auto need = [&](const char* key) -> const nlohmann::json& {
    if (!j.contains(key)) throw std::invalid_argument(fmt::format("case: missing \"{}\"", key));
    return j.at(key);
  };
  Case c;
  c.tokens = need("tokens").get<int32_t>();
  c.experts = need("experts").get<int32_t>();
  c.k = need("k").get<int32_t>();
  c.threads = j.value("threads", 1);
  c.split = j.value("split", 0);
  c.variant = j.value("variant", 0);
  c.allowNaN = j.value("allowNaN", false);
  if (c.tokens < 0 || c.experts < 0 || c.k < 0) {
    throw std::invalid_argument(
        fmt::format("case: need tokens, experts and k >= 0; got "
                    "tokens={} experts={} k={}",
                    c.tokens, c.experts, c.k));
  }
  if (static_cast<int64_t>(c.tokens) * c.experts > (int64_t{1} << 24)) {
    throw std::invalid_argument("case: tokens * experts above 2^24");
  }
  const auto& l = need("logits");
  if (!l.is_array() || l.size() != static_cast<size_t>(c.tokens) * c.experts) {
    throw std::invalid_argument(
        fmt::format("case: \"logits\" must hold tokens*experts = {} hex "
                    "strings",
                    static_cast<int64_t>(c.tokens) * c.experts));
  }
  for (const auto& v : l) c.logits.push_back(parseHex32(v.get<std::string>()));
  if (c.split < 0 || c.split > c.tokens) c.split = 0;
  if (j.contains("family")) c.family = familyFromJSON(j.at("family"), c.experts);
  return c;
}

std::string_view degenerateShape(const Case& c) {
  if (c.tokens == 0) return "empty-batch";
  if (c.experts == 0) return "no-experts";
  if (c.k == 0) return "k-zero";
  return "";
}

std::string_view degenerateShapeText(std::string_view shapeClass) {
  if (shapeClass == "empty-batch") return "an empty batch (T = 0)";
  if (shapeClass == "no-experts") return "no experts (E = 0)";
  if (shapeClass == "k-zero") return "k = 0";
  return "";
}

}  // namespace moe::fuzz
