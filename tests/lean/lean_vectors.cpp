#include "lean_vectors.hpp"

#include <bit>
#include <cmath>
#include <fstream>
#include <stdexcept>

namespace moe::lean {

std::string leanTracesDir() {
  return MOE_LEAN_TRACES_DIR;
}
std::string vectorsPath() {
  return leanTracesDir() + "/vectors/moe_spec_vectors_v1.json";
}
std::string schemaPath() {
  return leanTracesDir() + "/moe_vectors_v1.schema.json";
}

const json& vectors() {
  static const json file = [] {
    std::ifstream in(vectorsPath());
    if (!in) throw std::runtime_error("cannot read " + vectorsPath());
    return json::parse(in);
  }();
  return file;
}

std::vector<std::reference_wrapper<const json>> testsOfType(const json& file,
                                                            const std::string& type) {
  std::vector<std::reference_wrapper<const json>> out;
  for (const auto& group : file.at("testGroups")) {
    if (group.at("type") != type) continue;
    for (const auto& test : group.at("tests")) out.emplace_back(test);
  }
  return out;
}

namespace {
std::uint64_t parseHex(const std::string& text, std::size_t digits) {
  if (text.size() != digits + 2 || text[0] != '0' || text[1] != 'x') {
    throw std::invalid_argument("expected 0x and " + std::to_string(digits) +
                                " hex digits, got \"" + text + "\"");
  }
  std::uint64_t v = 0;
  for (std::size_t i = 2; i < text.size(); ++i) {
    const char c = text[i];
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else {
      throw std::invalid_argument("not a lowercase hex digit in \"" + text + "\"");
    }
    v = (v << 4) | static_cast<std::uint64_t>(d);
  }
  return v;
}
}  // namespace

float f32FromHex(const std::string& text) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(parseHex(text, 8)));
}
double f64FromHex(const std::string& text) {
  return std::bit_cast<double>(parseHex(text, 16));
}

mpq_class ratFromText(const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == text.size()) {
    throw std::invalid_argument("expected num/den, got \"" + text + "\"");
  }
  mpz_class num, den;
  if (num.set_str(text.substr(0, slash), 10) != 0 || den.set_str(text.substr(slash + 1), 10) != 0 ||
      den <= 0) {
    throw std::invalid_argument("expected num/den with den > 0, got \"" + text + "\"");
  }
  mpq_class q(num, den);
  q.canonicalize();
  if (q.get_den() != den) throw std::invalid_argument("not in lowest terms: \"" + text + "\"");
  return q;
}

std::uint32_t bitsOf(float x) {
  return std::bit_cast<std::uint32_t>(x);
}
std::uint64_t bitsOf(double x) {
  return std::bit_cast<std::uint64_t>(x);
}

namespace {
std::string hexDigits(std::uint64_t v, int digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s = "0x";
  for (int i = digits - 1; i >= 0; --i) s.push_back(kHex[(v >> (4 * i)) & 0xf]);
  return s;
}
}  // namespace

std::string hexOf(float x) {
  return hexDigits(bitsOf(x), 8);
}
std::string hexOf(double x) {
  return hexDigits(bitsOf(x), 16);
}

bool sameBits(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || bitsOf(a) == bitsOf(b);
}
bool sameBits(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || bitsOf(a) == bitsOf(b);
}

std::string describe(const json& test) {
  return "tcId " + std::to_string(test.at("tcId").get<long>()) + " (" +
         test.value("comment", std::string()) + ")";
}

}  // namespace moe::lean
