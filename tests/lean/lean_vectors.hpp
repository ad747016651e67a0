#pragma once
// Loading the Lean-exported golden vectors (lean-traces/vectors/) and decoding their
// values: floats are IEEE bit patterns in hex, rationals are "num/den" strings.
#include <gmpxx.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace moe::lean {

using nlohmann::json;

// Paths baked in by CMake (tests/lean/CMakeLists.txt).
std::string leanTracesDir();
std::string vectorsPath();
std::string schemaPath();

// The vector file, parsed once per process; throws std::runtime_error if unreadable.
const json& vectors();

// Every test of every group of the given type, with the group's type recorded.
std::vector<std::reference_wrapper<const json>> testsOfType(const json& file,
                                                            const std::string& type);

// "0x3f800000" -> float with those bits; throws std::invalid_argument on any other shape.
float f32FromHex(const std::string& text);
// "0x3ff0000000000000" -> double with those bits.
double f64FromHex(const std::string& text);
// "-3/4" -> exact rational; the denominator must be positive and the fraction reduced.
mpq_class ratFromText(const std::string& text);

std::uint32_t bitsOf(float x);
std::uint64_t bitsOf(double x);
std::string hexOf(float x);
std::string hexOf(double x);

// Bit-for-bit equality, except that any NaN matches any NaN: IEEE 754 leaves the sign and
// payload of a NaN result unspecified, and WebAssembly (where Lean ran) chooses freely.
bool sameBits(float a, float b);
bool sameBits(double a, double b);

// True when the test's "flags" name `flag`.
inline bool hasFlag(const json& t, const char* flag) {
  const auto& flags = t.at("flags");
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

// Whether some value is NaN (never, for rationals).
template <class A>
bool anyNaN(const std::vector<A>& v) {
  if constexpr (std::is_same_v<A, mpq_class>) {
    return false;
  } else {
    return std::any_of(v.begin(), v.end(), [](const A& x) { return std::isnan(x); });
  }
}

template <class A>
A scalarFromText(const std::string& text);
template <>
inline float scalarFromText<float>(const std::string& text) {
  return f32FromHex(text);
}
template <>
inline double scalarFromText<double>(const std::string& text) {
  return f64FromHex(text);
}
template <>
inline mpq_class scalarFromText<mpq_class>(const std::string& text) {
  return ratFromText(text);
}

template <class A>
std::vector<A> vecFromJson(const json& values) {
  std::vector<A> out;
  for (const auto& v : values) out.push_back(scalarFromText<A>(v.get<std::string>()));
  return out;
}

// "tcId 12 (comment)": the prefix of every failure message, so a failure names its test.
std::string describe(const json& test);

// An exp for the oracle's ...With functions that returns Lean's exp values in call order,
// throws when called more often than Lean did, and records its arguments when given
// somewhere to put them.
template <class A>
struct ReplayedExp {
  const std::vector<A>& values;
  std::vector<A>* arguments = nullptr;
  std::size_t next = 0;
  A operator()(const A& x) {
    if (next >= values.size()) throw std::out_of_range("exp called more often than Lean did");
    if (arguments != nullptr) arguments->push_back(x);
    return values[next++];
  }
};

// Every exp argument the oracle passed, against Lean's: x_i - m with Lean's max m, one per
// logit, in index order (IEEE subtraction rounds the same on both sides; NaN matches NaN).
// Returns "" when they agree, otherwise what differs first. Replays that inject Lean's exps
// check this, so that an injected exp cannot hide a wrong max or a wrong argument order.
template <class A>
std::string expArgumentMismatch(const std::vector<A>& logits, const A& leanMax,
                                const std::vector<A>& arguments) {
  if (arguments.size() != logits.size()) {
    return "exp called " + std::to_string(arguments.size()) + " times for " +
           std::to_string(logits.size()) + " logits";
  }
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const A expected = logits[i] - leanMax;
    bool same = false;
    if constexpr (std::is_same_v<A, mpq_class>) {
      same = arguments[i] == expected;
    } else {
      same = sameBits(arguments[i], expected);
    }
    if (!same) return "exp argument " + std::to_string(i) + " is not x_i - m with Lean's m";
  }
  return "";
}

}  // namespace moe::lean
