#include "moe/fuzz/shapes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace moe::fuzz {

namespace {

int64_t parseInt(std::string_view s, std::string_view what) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    throw std::invalid_argument(
        fmt::format("{}: \"{}\" is not a whole number (write values and ranges such as "
                    "8,16,32-64)",
                    what, s));
  }
  return v;
}

}  // namespace

IntSet IntSet::range(int64_t lo, int64_t hi) {
  IntSet s;
  s.add(lo, hi);
  return s;
}

IntSet IntSet::ofValues(std::vector<int64_t> values) {
  std::sort(values.begin(), values.end());
  IntSet s;
  for (int64_t v : values) {
    if (!s.ranges_.empty() && v <= s.ranges_.back().hi + 1) {
      s.ranges_.back().hi = std::max(s.ranges_.back().hi, v);
    } else {
      s.ranges_.push_back({v, v});
    }
  }
  return s;
}

void IntSet::add(int64_t lo, int64_t hi) {
  if (lo > hi) return;
  ranges_.push_back({lo, hi});
  std::sort(ranges_.begin(), ranges_.end(),
            [](const IntRange& a, const IntRange& b) { return a.lo < b.lo; });
  std::vector<IntRange> merged;
  for (const IntRange& r : ranges_) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  ranges_ = std::move(merged);
}

IntSet IntSet::parse(std::string_view text, std::string_view what, int64_t min, int64_t max) {
  IntSet s;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(start, comma - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    // A '-' after the first character separates a range (a leading '-' is a sign).
    const size_t dash = item.find('-', 1);
    const int64_t lo = parseInt(item.substr(0, dash), what);
    const int64_t hi = dash == std::string_view::npos ? lo : parseInt(item.substr(dash + 1), what);
    if (lo > hi) {
      throw std::invalid_argument(
          fmt::format("{}: range \"{}\" is empty (low > high)", what, item));
    }
    if (lo < min || hi > max) {
      throw std::invalid_argument(
          fmt::format("{}: \"{}\" is outside the accepted {} to {}", what, item, min, max));
    }
    s.add(lo, hi);
    start = comma + 1;
  }
  if (s.empty()) throw std::invalid_argument(fmt::format("{}: no value given", what));
  return s;
}

bool IntSet::contains(int64_t v) const {
  return std::any_of(ranges_.begin(), ranges_.end(),
                     [&](const IntRange& r) { return r.lo <= v && v <= r.hi; });
}

IntSet IntSet::clamp(int64_t lo, int64_t hi) const {
  IntSet s;
  for (const IntRange& r : ranges_) s.add(std::max(r.lo, lo), std::min(r.hi, hi));
  return s;
}

IntSet IntSet::intersect(const IntSet& other) const {
  IntSet s;
  for (const IntRange& r : ranges_) {
    for (const IntRange& o : other.ranges_) s.add(std::max(r.lo, o.lo), std::min(r.hi, o.hi));
  }
  return s;
}

std::string IntSet::text() const {
  std::string out;
  for (const IntRange& r : ranges_) {
    if (!out.empty()) out += ',';
    out += r.lo == r.hi ? fmt::format("{}", r.lo) : fmt::format("{}-{}", r.lo, r.hi);
  }
  return out;
}

void ShapeSpace::validate() const {
  if (experts.empty() || tokens.empty()) {
    throw std::invalid_argument("shapes: the experts and tokens sets must not be empty");
  }
  const int64_t minT = std::max<int64_t>(tokens.min(), 1);
  if (experts.clamp(0, kDrawMaxLogits / minT).empty()) {
    throw std::invalid_argument(fmt::format(
        "shapes: no case fits: {} tokens times {} experts is above the {} logits a case may "
        "hold",
        minT, experts.min(), kDrawMaxLogits));
  }
}

std::string ShapeSpace::text() const {
  return fmt::format("E {}, k {}, T {}", experts.text(), k.empty() ? "0 to E+2" : k.text(),
                     tokens.text());
}

}  // namespace moe::fuzz
