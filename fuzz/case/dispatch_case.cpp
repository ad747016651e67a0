#include "moe/fuzz/dispatch_case.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <stdexcept>

namespace moe::fuzz {

nlohmann::json dispatchCaseJSON(const DispatchCase& c) {
  nlohmann::json j = {{"tokens", c.tokens},
                      {"k", c.k},
                      {"experts", c.experts},
                      {"block", c.block},
                      {"capacity", c.capacity},
                      {"max_rows", c.maxRows},
                      {"ids", c.ids}};
  nlohmann::json nulls = nlohmann::json::array();
  if (c.nullIds) nulls.push_back("ids");
  if (c.nullSortedSlots) nulls.push_back("sorted_slots");
  if (c.nullBlockExpert) nulls.push_back("block_expert");
  if (c.nullRows) nulls.push_back("rows");
  j["null"] = nulls;
  return j;
}

DispatchCase dispatchCaseFromJSON(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("dispatch case: not an object");
  DispatchCase c;
  auto i32 = [&](const char* key, int32_t& out) {
    if (!j.contains(key) || !j[key].is_number_integer()) {
      throw std::invalid_argument(fmt::format("dispatch case: \"{}\" must be an integer", key));
    }
    const int64_t v = j[key].get<int64_t>();
    if (v < INT32_MIN || v > INT32_MAX) {
      throw std::invalid_argument(
          fmt::format("dispatch case: \"{}\" = {} is not an int32", key, v));
    }
    out = static_cast<int32_t>(v);
  };
  i32("tokens", c.tokens);
  i32("k", c.k);
  i32("experts", c.experts);
  i32("block", c.block);
  i32("capacity", c.capacity);
  i32("max_rows", c.maxRows);
  if (!j.contains("ids") || !j["ids"].is_array()) {
    throw std::invalid_argument("dispatch case: \"ids\" must be an array of integers");
  }
  for (const auto& v : j["ids"]) {
    if (!v.is_number_integer() || v.get<int64_t>() < INT32_MIN || v.get<int64_t>() > INT32_MAX) {
      throw std::invalid_argument("dispatch case: \"ids\" holds int32 values only");
    }
    c.ids.push_back(v.get<int32_t>());
  }
  if (j.contains("null")) {
    if (!j["null"].is_array()) throw std::invalid_argument("dispatch case: \"null\" is an array");
    for (const auto& v : j["null"]) {
      const std::string name = v.is_string() ? v.get<std::string>() : "";
      if (name == "ids") {
        c.nullIds = true;
      } else if (name == "sorted_slots") {
        c.nullSortedSlots = true;
      } else if (name == "block_expert") {
        c.nullBlockExpert = true;
      } else if (name == "rows") {
        c.nullRows = true;
      } else {
        throw std::invalid_argument(fmt::format(
            "dispatch case: \"null\" names ids, sorted_slots, block_expert or rows, got {}",
            v.dump()));
      }
    }
  }
  const int64_t slots = c.slots();
  const bool fits = slots >= 0 && slots <= INT32_MAX;
  if (!c.nullIds && fits && static_cast<int64_t>(c.ids.size()) != slots) {
    throw std::invalid_argument(
        fmt::format("dispatch case: {} ids for tokens * k = {} slots", c.ids.size(), slots));
  }
  return c;
}

std::string dispatchShapeText(const DispatchCase& c) {
  return fmt::format("T {}, k {}, E {}, block {}, capacity {}, max_rows {}", c.tokens, c.k,
                     c.experts, c.block, c.capacity, c.maxRows);
}

int64_t dispatchRowsNeeded(const DispatchCase& c) {
  if (c.tokens < 0 || c.k < 0 || c.experts < 0 || c.block < 1 || c.nullIds) return -1;
  if (static_cast<int64_t>(c.ids.size()) != c.slots()) return -1;
  std::vector<int64_t> load(static_cast<size_t>(c.experts), 0);
  for (int32_t id : c.ids) {
    if (id < -1 || id >= c.experts) return -1;
    if (id >= 0 && (c.capacity < 0 || load[id] < c.capacity)) ++load[id];
  }
  int64_t rows = 0;
  for (int64_t n : load) rows += (n + c.block - 1) / c.block * c.block;
  return rows;
}

DispatchShapes dispatchShapesFor(const DispatchShapes& contract, const std::string& tokens,
                                 const std::string& k, const std::string& experts,
                                 const std::string& block, const std::string& capacity) {
  DispatchShapes s = contract;
  if (!tokens.empty()) s.tokens = IntSet::parse(tokens, "--tokens", 0, INT32_MAX);
  if (!k.empty()) s.k = IntSet::parse(k, "--k", 0, 65536);
  if (!experts.empty()) s.experts = IntSet::parse(experts, "--experts", 0, 65536);
  if (!block.empty()) s.block = IntSet::parse(block, "--block", 1, 65536);
  if (!capacity.empty()) s.capacity = IntSet::parse(capacity, "--capacity", -1, INT32_MAX);
  return s;
}

namespace {

using Rng = std::mt19937_64;

int64_t uniform(Rng& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

bool chance(Rng& rng, double p) {
  return std::uniform_real_distribution<double>(0, 1)(rng) < p;
}

// `want` when the set allows it (or is empty: the fuzzer's own range), else a member of the
// set, near the low end of one of its ranges half the time (small cases are cheap).
int64_t within(Rng& rng, const IntSet& set, int64_t want) {
  if (set.empty() || set.contains(want)) return want;
  const auto& ranges = set.ranges();
  const IntRange r = ranges[static_cast<size_t>(uniform(rng, 0, int64_t(ranges.size()) - 1))];
  if (chance(rng, 0.5)) return r.lo + uniform(rng, 0, std::min<int64_t>(r.hi - r.lo, 16));
  return uniform(rng, r.lo, r.hi);
}

int64_t drawTokens(Rng& rng) {
  const int64_t band = uniform(rng, 0, 99);
  if (band < 3) return 0;
  if (band < 13) return 1;
  if (band < 55) return uniform(rng, 2, 64);
  if (band < 93) return uniform(rng, 65, 4096);
  return uniform(rng, 4097, 65536);
}

int64_t drawExperts(Rng& rng) {
  const int64_t band = uniform(rng, 0, 99);
  if (band < 2) return 0;
  if (band < 7) return 1;
  if (band < 60) return uniform(rng, 2, 64);
  if (band < 92) return uniform(rng, 65, 256);
  return uniform(rng, 257, 4096);
}

int64_t drawK(Rng& rng, int64_t experts) {
  const int64_t band = uniform(rng, 0, 99);
  if (band < 2) return 0;
  if (band < 20) return 1;
  if (band < 90) return uniform(rng, 2, 10);
  return uniform(rng, 0, std::max<int64_t>(experts + 2, 2));
}

// Blocks of 1 to 256: one, the powers of two GEMM tiles use, and any value.
int64_t drawBlock(Rng& rng) {
  const int64_t band = uniform(rng, 0, 99);
  if (band < 15) return 1;
  if (band < 65) return int64_t{1} << uniform(rng, 1, 8);
  return uniform(rng, 1, 256);
}

// Expert loads: uniform, skewed toward a few hot experts, all on one, or from a band.
void drawIds(Rng& rng, DispatchCase& c) {
  c.ids.assign(static_cast<size_t>(c.slots()), -1);
  if (c.experts == 0) return;  // every slot empty
  const double empty = std::array<double, 5>{0, 0, 0.05, 0.5, 1}[uniform(rng, 0, 4)];
  const int64_t shape = uniform(rng, 0, 3);
  const int64_t hot = uniform(rng, 0, c.experts - 1);
  const int64_t lo = uniform(rng, 0, c.experts - 1);
  const int64_t hi = std::min<int64_t>(c.experts - 1, lo + uniform(rng, 0, 7));
  std::geometric_distribution<int64_t> skew(0.3);
  for (auto& id : c.ids) {
    if (empty > 0 && chance(rng, empty)) continue;
    int64_t e = 0;
    switch (shape) {
      case 0:
        e = uniform(rng, 0, c.experts - 1);
        break;
      case 1:
        e = (hot + skew(rng)) % c.experts;
        break;
      case 2:
        e = hot;
        break;
      default:
        e = uniform(rng, lo, hi);
        break;
    }
    id = static_cast<int32_t>(e);
  }
}

// The most slots one expert gets: the capacity values that matter sit at and around it.
int64_t maxLoad(const DispatchCase& c) {
  std::vector<int64_t> load(static_cast<size_t>(c.experts), 0);
  int64_t most = 0;
  for (int32_t id : c.ids) {
    if (id >= 0) most = std::max(most, ++load[id]);
  }
  return most;
}

int64_t drawCapacity(Rng& rng, const DispatchCase& c) {
  const int64_t most = maxLoad(c);
  const int64_t band = uniform(rng, 0, 99);
  if (band < 35) return -1;
  if (band < 42) return 0;
  if (band < 50) return 1;
  if (band < 80) return std::max<int64_t>(0, most + uniform(rng, -1, 1));
  return uniform(rng, 0, std::max<int64_t>(1, 2 * most));
}

// max_rows: the bound serving engines allocate (T k + E (block - 1)), exactly the rows
// needed, or a little more.
int64_t drawMaxRows(Rng& rng, const DispatchCase& c) {
  const int64_t needed = std::max<int64_t>(0, dispatchRowsNeeded(c));
  const int64_t band = uniform(rng, 0, 99);
  if (band < 65) return c.slots() + int64_t{c.experts} * (c.block - 1);
  if (band < 85) return needed;
  return needed + uniform(rng, 1, 3 * int64_t{c.block});
}

// One way out of the domain (the statuses' cases): a negative size, a block below 1, an id
// out of range, max_rows one short, a NULL buffer, tokens * k past int32.
void breakDomain(Rng& rng, DispatchCase& c) {
  switch (uniform(rng, 0, 6)) {
    case 0: {
      const int32_t bad = chance(rng, 0.5) ? -1 : INT32_MIN;
      (uniform(rng, 0, 2) == 0 ? c.tokens : chance(rng, 0.5) ? c.k : c.experts) = bad;
      c.ids.clear();
      break;
    }
    case 1:
      c.block = std::array<int32_t, 3>{0, -1, INT32_MIN}[uniform(rng, 0, 2)];
      break;
    case 2:
      if (c.ids.empty()) {
        c.block = 0;
        break;
      }
      c.ids[static_cast<size_t>(uniform(rng, 0, int64_t(c.ids.size()) - 1))] =
          std::array<int32_t, 4>{c.experts, -2, INT32_MAX, INT32_MIN}[uniform(rng, 0, 3)];
      break;
    case 3: {
      const int64_t needed = dispatchRowsNeeded(c);
      c.maxRows = static_cast<int32_t>(needed > 0 ? needed - 1 : -1);
      break;
    }
    case 4:
      switch (uniform(rng, 0, 3)) {
        case 0:
          c.nullIds = true;
          c.tokens = std::max(c.tokens, 1);
          c.k = std::max(c.k, 1);
          c.ids.clear();
          break;
        case 1:
          c.nullSortedSlots = true;
          c.maxRows = std::max(c.maxRows, 1);
          break;
        case 2:
          c.nullBlockExpert = true;
          c.maxRows = std::max(c.maxRows, c.block);
          break;
        default:
          c.nullRows = true;
          break;
      }
      break;
    case 5:
      c.tokens = 65536;
      c.k = static_cast<int32_t>(uniform(rng, 32768, 65536));
      c.nullIds = true;
      c.ids.clear();
      break;
    default:
      c.maxRows = INT32_MIN;
      break;
  }
}

}  // namespace

DispatchCase drawDispatchCase(Rng& rng, const DispatchDraw& draw) {
  const DispatchShapes& s = draw.shapes;
  DispatchCase c;
  c.experts = static_cast<int32_t>(within(rng, s.experts, drawExperts(rng)));
  c.k = static_cast<int32_t>(within(rng, s.k, drawK(rng, c.experts)));
  int64_t tokens = drawTokens(rng);
  // Most cases stay under 2^18 slots; now and then one crosses 2^16 or 2^24 (a 32-bit
  // count kept in 16 bits, or a float index that stops being exact at 2^24).
  const bool huge = draw.huge && c.k > 0 && chance(rng, 0.02);
  if (huge) {
    const int64_t target = chance(rng, 0.7) ? (int64_t{1} << 16) : (int64_t{1} << 24);
    tokens = (target + uniform(rng, -64, 64 * int64_t{c.k})) / c.k + 1;
  } else if (tokens * c.k > (int64_t{1} << 18)) {
    tokens = (int64_t{1} << 18) / std::max<int32_t>(c.k, 1);
  }
  c.tokens = static_cast<int32_t>(within(rng, s.tokens, tokens));
  c.block = static_cast<int32_t>(within(rng, s.block, drawBlock(rng)));
  if (c.slots() > INT32_MAX) c.tokens = static_cast<int32_t>(INT32_MAX / std::max(c.k, 1));
  drawIds(rng, c);
  c.capacity = static_cast<int32_t>(within(rng, s.capacity, drawCapacity(rng, c)));
  c.maxRows = static_cast<int32_t>(std::min<int64_t>(INT32_MAX, drawMaxRows(rng, c)));
  if (!draw.domainOnly && chance(rng, 0.08)) breakDomain(rng, c);
  return c;
}

}  // namespace moe::fuzz
