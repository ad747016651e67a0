// describeToken (token_text.hpp): the one explanation of a token, v1 and the routing family.
#include "moe/fuzz/token_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <regex>
#include <vector>

#include "moe/fuzz/family_params.hpp"
#include "moe/fuzz/float_bits.hpp"
#include "moe/oracle/certified/family.hpp"
#include "moe/oracle/certified/gates.hpp"
#include "moe/oracle/routing.hpp"

namespace moe::fuzz {

namespace {

using oracle::certified::Certified;

std::string range(const Certified& c) {
  return fmt::format("[{:.9g}, {:.9g}]", c.range.lowerDouble(), c.range.upperDouble());
}

// The router's slots: slot[e] for each expert it names, and its kept set S when the first
// min(k, n) slots are distinct ids in range (else empty: no gates to compare).
struct RouterSlots {
  std::vector<int> slot;
  std::vector<size_t> kept;
};

RouterSlots routerSlots(size_t E, size_t n, std::span<const int32_t> ids) {
  RouterSlots r;
  r.slot.assign(E, -1);
  for (size_t s = 0; s < ids.size(); ++s) {
    if (ids[s] >= 0 && static_cast<size_t>(ids[s]) < E) r.slot[ids[s]] = static_cast<int>(s);
  }
  for (size_t s = 0; s < n && s < ids.size(); ++s) {
    const int32_t id = ids[s];
    if (id < 0 || static_cast<size_t>(id) >= E ||
        std::find(r.kept.begin(), r.kept.end(), static_cast<size_t>(id)) != r.kept.end()) {
      r.kept.clear();
      break;
    }
    r.kept.push_back(static_cast<size_t>(id));
  }
  return r;
}

std::string routerCell(const RouterSlots& r, size_t e, std::span<const float> gates) {
  const int s = r.slot[e];
  if (s < 0) return "-";
  if (static_cast<size_t>(s) >= gates.size()) return fmt::format("{}", s);
  return fmt::format("{}: {} {}", s, decimal32(gates[s]), hex32(gates[s]));
}

void keptSetGates(fmt::memory_buffer& out, const std::vector<size_t>& S,
                  std::span<const float> gates, const std::vector<Certified>& exact,
                  const char* what) {
  fmt::format_to(std::back_inserter(out), "gates of the router's kept set ({}):\n", what);
  for (size_t s = 0; s < S.size() && s < gates.size(); ++s) {
    fmt::format_to(std::back_inserter(out),
                   "  slot {} expert {}: router {} ({}), exact in [{:.17g}, {:.17g}], correctly "
                   "rounded {}\n",
                   s, S[s], decimal32(gates[s]), hex32(gates[s]), exact[s].range.lowerDouble(),
                   exact[s].range.upperDouble(), hex32(exact[s].f32));
  }
}

void moreExperts(fmt::memory_buffer& out, size_t shown, size_t E) {
  if (shown < E) {
    fmt::format_to(std::back_inserter(out), "... {} more experts in the case JSON\n", E - shown);
  }
}

// The experts a table shows: every one of a row of at most maxShown; of a longer row, those
// that matter to the finding (the certificate's, the router's kept ones, the spec's kept
// ones and its first displaced one), in index order, up to maxShown.
std::vector<size_t> shownExperts(size_t E, size_t maxShown, std::span<const size_t> focus,
                                 std::span<const size_t> routerKept,
                                 std::span<const size_t> specKept) {
  std::vector<size_t> rows;
  if (E <= maxShown) {
    rows.resize(E);
    std::iota(rows.begin(), rows.end(), size_t{0});
    return rows;
  }
  std::vector<uint8_t> take(E, 0);
  size_t taken = 0;
  for (auto list : {focus, routerKept, specKept}) {
    for (size_t e : list) {
      if (e < E && !take[e] && taken < maxShown) take[e] = 1, ++taken;
    }
  }
  for (size_t e = 0; e < E; ++e) {
    if (take[e]) rows.push_back(e);
  }
  return rows;
}

void describeV1(fmt::memory_buffer& out, std::span<const float> x, int32_t k,
                std::span<const int32_t> ids, std::span<const float> gates, size_t maxShown,
                std::span<const size_t> focus) {
  const size_t E = x.size();
  const size_t n = std::min<size_t>(static_cast<size_t>(std::max(k, 0)), E);
  const bool real = oracle::certified::isRealRow(x);
  const bool nan = std::any_of(x.begin(), x.end(), [](float v) { return std::isnan(v); });
  std::vector<size_t> rank(E, 0);
  if (!nan) rank = oracle::ranks(x);
  std::vector<Certified> p, g;
  if (real) {
    p = oracle::certified::softmaxEnclosure(x);
    g = oracle::certified::gatesEnclosure(static_cast<size_t>(std::max(k, 0)), x);
  }
  const RouterSlots r = routerSlots(E, n, ids);
  fmt::format_to(std::back_inserter(out), "E = {}, k = {}, row is {}\n", E, k,
                 real ? "real (the spec's values are real numbers)"
                      : "not real (NaN, +inf or all -inf): only structure is checked");
  fmt::format_to(std::back_inserter(out), "{:>6} {:>14} {:>11} {:>5} {:>10} {:>24} {:>24} {:>22}\n",
                 "expert", "logit", "hex", "rank", "spec", "exact probability ~", "exact gate ~",
                 "router (slot: gate)");
  std::vector<size_t> specKept;
  for (size_t e = 0; e < E && !nan; ++e) {
    if (rank[e] <= n) specKept.push_back(e);  // the kept ones and the first displaced one
  }
  const std::vector<size_t> rows = shownExperts(E, maxShown, focus, r.kept, specKept);
  for (size_t e : rows) {
    fmt::format_to(
        std::back_inserter(out), "{:>6} {:>14} {:>11} {:>5} {:>10} {:>24} {:>24} {:>22}\n", e,
        decimal32(x[e]), hex32(x[e]), nan ? std::string("-") : fmt::format("{}", rank[e]),
        nan ? "-" : (rank[e] < n ? "kept" : "displaced"), real ? range(p[e]) : std::string("-"),
        real ? range(g[e]) : std::string("-"), routerCell(r, e, gates));
  }
  moreExperts(out, rows.size(), E);
  if (real && n > 0 && n < E) {
    size_t lastKept = 0, firstOut = 0;
    for (size_t e = 0; e < E; ++e) {
      if (rank[e] == n - 1) lastKept = e;
      if (rank[e] == n) firstOut = e;
    }
    fmt::format_to(std::back_inserter(out),
                   "kept boundary: expert {} (rank {}) vs expert {} (rank {}): logit margin "
                   "{:.9g}, probability margin ~{:.9g}\n",
                   lastKept, n - 1, firstOut, n,
                   static_cast<double>(x[lastKept]) - static_cast<double>(x[firstOut]),
                   p[lastKept].f64 - p[firstOut].f64);
  }
  if (real && !r.kept.empty()) {
    try {
      keptSetGates(out, r.kept, gates, oracle::certified::keptGatesEnclosure(x, r.kept),
                   "softmax over the kept logits");
    } catch (const std::exception& e) {
      fmt::format_to(std::back_inserter(out), "(no exact gates: {})\n", e.what());
    }
  }
}

void describeFamily(fmt::memory_buffer& out, std::span<const float> x, const Family& f, int32_t k,
                    std::span<const int32_t> ids, std::span<const float> gates, size_t maxShown,
                    std::span<const size_t> focus) {
  const size_t E = x.size();
  fmt::format_to(std::back_inserter(out), "E = {}, k = {}, family: {}\n", E, k, familyText(f));
  if (!f.bias.empty()) {
    fmt::format_to(std::back_inserter(out), "bias b (e_score_correction_bias): {} values\n",
                   f.bias.size());
  }
  const std::string invalid = familyInvalidReason(f, static_cast<int32_t>(E));
  if (!invalid.empty()) {
    fmt::format_to(std::back_inserter(out),
                   "parameters outside the domain ({}): the router must return "
                   "MOE_ROUTE_EBADPARAMS and write nothing\n",
                   invalid);
    return;
  }
  const oracle::RouteParams<float> p = familyRouteParams(f, std::max(k, 0));
  const size_t n = std::min(p.k, static_cast<size_t>(familyEligible(f, static_cast<int32_t>(E))));
  const bool real = E > 0 && oracle::certified::isRealRouteRow(p, x);
  fmt::format_to(
      std::back_inserter(out), "row is {}\n",
      real ? "real (the spec's values are real numbers)" : "not real: only structure is checked");
  const RouterSlots r = routerSlots(E, n, ids);
  std::vector<Certified> s, c, gs;
  oracle::certified::RouteGatesResult spec;
  if (real) {
    s = oracle::certified::scoresEnclosure(p.score, x);
    c = oracle::certified::biasedKeysEnclosure(p.score, x, p.bias);
    gs = oracle::certified::groupScoresEnclosure(p, x);
    spec = oracle::certified::routeGatesEnclosure(p, x);
  }
  const auto& d = spec.decision;
  const size_t size = f.groups > 0 ? E / static_cast<size_t>(f.groups) : E;
  if (real && f.groups > 1) {
    fmt::format_to(
        std::back_inserter(out), "groups ({} of {} experts, score = {}):\n", f.groups, size,
        f.groupScore == GroupScoreFunction::kTop2Sum ? "sum of the two best keys" : "the best key");
    fmt::format_to(std::back_inserter(out), "{:>6} {:>10} {:>34} {:>8} {:>8}\n", "group", "experts",
                   "exact group score ~", "spec", "router");
    for (size_t h = 0; h < static_cast<size_t>(f.groups); ++h) {
      bool byRouter = false;
      for (size_t e : r.kept) byRouter = byRouter || e / size == h;
      fmt::format_to(std::back_inserter(out), "{:>6} {:>10} {:>34} {:>8} {:>8}\n", h,
                     fmt::format("{}..{}", h * size, (h + 1) * size - 1), range(gs[h]),
                     d.decided ? (d.keptGroups[h] ? "kept" : "dropped") : "?",
                     byRouter ? "kept" : "-");
    }
  }
  std::vector<size_t> rank(E, E);
  for (size_t i = 0; i < d.keptExperts.size(); ++i) rank[d.keptExperts[i]] = i;
  fmt::format_to(std::back_inserter(out),
                 "{:>6} {:>14} {:>11} {:>24} {:>24} {:>24} {:>5} {:>10} {:>24} {:>22}\n", "expert",
                 "logit", "hex", "score s ~", "bias b (hex)", "key s + b ~", "group", "spec",
                 "exact gate ~", "router (slot: gate)");
  const std::vector<size_t> specKept(d.keptExperts.begin(), d.keptExperts.end());
  const std::vector<size_t> rows = shownExperts(E, maxShown, focus, r.kept, specKept);
  for (size_t e : rows) {
    std::string spec32 = "-";
    if (real && !d.decided) {
      spec32 = "?";
    } else if (real) {
      spec32 = d.kept[e] ? fmt::format("kept {}", rank[e])
                         : (d.eligible[e] ? "displaced" : "ineligible");
    }
    fmt::format_to(std::back_inserter(out),
                   "{:>6} {:>14} {:>11} {:>24} {:>24} {:>24} {:>5} {:>10} {:>24} {:>22}\n", e,
                   decimal32(x[e]), hex32(x[e]), real ? range(s[e]) : std::string("-"),
                   f.bias.empty() ? std::string("none")
                                  : fmt::format("{} {}", decimal32(f.bias[e]), hex32(f.bias[e])),
                   real ? range(c[e]) : std::string("-"), size > 0 ? e / size : 0, spec32,
                   real && d.decided ? range(spec.gates[e]) : std::string("-"),
                   routerCell(r, e, gates));
  }
  moreExperts(out, rows.size(), E);
  if (real && !d.decided) {
    fmt::format_to(std::back_inserter(out), "the spec's decision abstains: {}\n", d.tooClose);
  }
  if (real && !r.kept.empty()) {
    try {
      keptSetGates(out, r.kept, gates, oracle::certified::routeKeptGatesEnclosure(p, x, r.kept),
                   f.renormalize == 1 ? "unbiased scores over their sum, times the scale"
                                      : "unbiased scores times the scale");
    } catch (const std::exception& e) {
      fmt::format_to(std::back_inserter(out), "(no exact gates: {})\n", e.what());
    }
  }
}

}  // namespace

std::string describeToken(std::span<const float> x, const std::optional<Family>& family, int32_t k,
                          std::span<const int32_t> ids, std::span<const float> gates,
                          size_t maxShown, std::span<const size_t> focus) {
  fmt::memory_buffer out;
  if (family) {
    describeFamily(out, x, *family, k, ids, gates, maxShown, focus);
  } else {
    describeV1(out, x, k, ids, gates, maxShown, focus);
  }
  return fmt::to_string(out);
}

std::vector<size_t> expertsNamed(std::string_view certificate, const std::optional<Family>& family,
                                 size_t E) {
  std::vector<size_t> out;
  const size_t size = family && family->groups > 1 ? E / static_cast<size_t>(family->groups) : 0;
  // "expert 12", "experts 3 and 7", "group 6" (every member of a group of up to 32).
  static const std::regex kNamed(R"((experts?|groups?) (\d+)(?: and (\d+))?)");
  for (auto it = std::cregex_iterator(certificate.data(), certificate.data() + certificate.size(),
                                      kNamed);
       it != std::cregex_iterator(); ++it) {
    const bool group = (*it)[1].str().rfind("group", 0) == 0;
    for (int m = 2; m <= 3; ++m) {
      if (!(*it)[m].matched) continue;
      const size_t v = std::stoul((*it)[m].str());
      if (!group) {
        if (v < E) out.push_back(v);
      } else if (size > 0 && size <= 32 && v * size < E) {
        for (size_t e = v * size; e < (v + 1) * size; ++e) out.push_back(e);
      }
    }
  }
  return out;
}

std::string describeVerdictToken(const Case& c, const RouteOutput& output, const Verdict& v,
                                 size_t maxShown) {
  const size_t k = static_cast<size_t>(c.k), at = static_cast<size_t>(v.token) * k;
  const auto ids = std::span<const int32_t>(output.ids);
  const auto gates = std::span<const float>(output.gates);
  const bool whole = at + k <= ids.size() && ids.size() == gates.size();
  return describeToken(c.row(v.token), c.family, c.k,
                       whole ? ids.subspan(at, k) : std::span<const int32_t>(),
                       whole ? gates.subspan(at, k) : std::span<const float>(), maxShown,
                       expertsNamed(v.certificate, c.family, static_cast<size_t>(c.experts)));
}

}  // namespace moe::fuzz
