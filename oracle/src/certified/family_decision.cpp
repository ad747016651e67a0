// The routing decision of the family over the reals: which groups and experts are kept,
// by the exact real order with ties to the lower index. Each comparison is decided by
// disjoint enclosures, by an exact comparison of logits (equal biases: the scores are
// strictly increasing in the logit), or by the exact forms (equal values); anything else
// asks for more precision, and at options.maxPrecision the decision abstains.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "family_forms.hpp"
#include "moe/oracle/certified/family.hpp"
#include "moe/oracle/error.hpp"
#include "moe/oracle/routing.hpp"
#include "ziv.hpp"

namespace moe::oracle::certified {

namespace {

using detail::Form;
using detail::RowAtoms;

enum class Order { greater, equal, less, unknown };

Order byIntervals(const Interval& a, const Interval& b) {
  if (mpfr_greater_p(a.lower.get(), b.upper.get())) return Order::greater;
  if (mpfr_less_p(a.upper.get(), b.lower.get())) return Order::less;
  return Order::unknown;
}

// One compared quantity: its enclosure at the working precision and, when known, its form.
struct Quantity {
  Interval iv;
  std::optional<Form> form;
  std::optional<BigFloat> q;          // form->q exactly, when it fits 320 bits (keys: always)
  std::optional<std::size_t> expert;  // a max group's score: this expert's key
};

// `beats` over the reals given a comparison: strictly larger, or equal and a lower index.
enum class Beats { yes, no, unknown };
Beats beatsFrom(Order o, std::size_t j, std::size_t i) {
  if (o == Order::unknown) return Beats::unknown;
  return o == Order::greater || (o == Order::equal && j < i) ? Beats::yes : Beats::no;
}

// The best n of `candidates` by a decided `beats`, best first; nullopt (and the pair in
// `undecided`) when some comparison it needs is unknown. Correct for any candidate order;
// candidates sorted by upper bound make it a single pass and allow stopping early.
template <class BeatsFn>
std::optional<std::vector<std::size_t>> selectBest(std::size_t n, std::vector<std::size_t> cand,
                                                   const std::vector<Quantity>& q, BeatsFn&& beats,
                                                   std::pair<std::size_t, std::size_t>& undecided) {
  std::vector<double> hi(q.size()), lo(q.size());
  for (std::size_t i : cand) {
    hi[i] = q[i].iv.upperDouble();
    lo[i] = q[i].iv.lowerDouble();
  }
  std::sort(cand.begin(), cand.end(), [&](std::size_t a, std::size_t b) {
    return hi[a] > hi[b] || (hi[a] == hi[b] && a < b);
  });
  std::vector<std::size_t> best;
  n = std::min(n, cand.size());
  if (n == 0) return best;
  for (std::size_t i : cand) {
    // Later candidates have upper bounds <= hi[i] < the last kept one's lower bound.
    if (best.size() == n && hi[i] < lo[best.back()]) break;
    std::size_t pos = best.size();
    while (pos > 0) {
      const Beats b = beats(i, best[pos - 1]);
      if (b == Beats::unknown) {
        undecided = {i, best[pos - 1]};
        return std::nullopt;
      }
      if (b == Beats::no) break;
      --pos;
    }
    if (pos == n) continue;
    best.insert(best.begin() + static_cast<std::ptrdiff_t>(pos), i);
    if (best.size() > n) best.pop_back();
  }
  return best;
}

// Everything one working precision knows about the row.
struct Level {
  const RouteParams<float>& p;
  std::span<const float> logits;
  RowAtoms atoms;
  std::vector<Quantity> keys;

  Level(const RouteParams<float>& params, std::span<const float> l)
      : p(params), logits(l), atoms(params.score, l), keys(l.size()) {
    for (std::size_t e = 0; e < l.size(); ++e) {
      keys[e].form = atoms.keyForm(l[e], p.bias.empty() ? nullptr : &p.bias[e]);
      BigFloat q(320);
      if (mpfr_set_q(q.get(), keys[e].form->q.get_mpq_t(), MPFR_RNDN) == 0)
        keys[e].q = std::move(q);
    }
  }

  void at(mpfr_prec_t precision) {
    atoms.encloseAt(precision);
    for (auto& k : keys) atoms.interval(*k.form, k.iv, k.q ? k.q->get() : nullptr);
  }

  Order compareKeys(std::size_t i, std::size_t j) const {
    const bool sameBias = p.bias.empty() || p.bias[i] == p.bias[j];
    if (sameBias) {  // both scores strictly increase with the logit (±inf included)
      if (logits[i] > logits[j]) return Order::greater;
      if (logits[i] < logits[j]) return Order::less;
      return Order::equal;
    }
    return compare(keys[i], keys[j]);
  }

  Order compare(const Quantity& a, const Quantity& b) const {
    // Two max groups compare as their best keys do (exactly, by the logits, when the two
    // experts have the same bias: sigmoid(1e38) < sigmoid(2e38) needs no precision).
    if (a.expert && b.expert) return compareKeys(*a.expert, *b.expert);
    const Order o = byIntervals(a.iv, b.iv);
    if (o != Order::unknown) return o;
    if (a.form && b.form && atoms.equal(*a.form, *b.form)) return Order::equal;
    return Order::unknown;
  }

  // The best n experts of `members` by their keys (n = 1 or 2 inside a group).
  std::optional<std::vector<std::size_t>> bestExperts(std::size_t n,
                                                      std::vector<std::size_t> members,
                                                      std::pair<std::size_t, std::size_t>& u) {
    return selectBest(
        n, std::move(members), keys,
        [&](std::size_t j, std::size_t i) { return beatsFrom(compareKeys(j, i), j, i); }, u);
  }

  // Group g's score: from the decided best keys when they are decided (a form, so exact
  // ties between groups are found), else order-free bounds (max / top-two sum of bounds,
  // both monotone in every key, so they enclose whichever keys are best).
  Quantity groupScore(std::size_t g) {
    const std::size_t size = logits.size() / p.groups;
    std::vector<std::size_t> members(size);
    for (std::size_t t = 0; t < size; ++t) members[t] = g * size + t;
    const std::size_t n = p.groupScore == GroupScore::max ? 1 : 2;
    Quantity out;
    std::pair<std::size_t, std::size_t> ignored;
    if (const auto best = bestExperts(n, members, ignored)) {
      Form f;
      for (std::size_t e : *best) f += *keys[e].form;
      atoms.interval(f, out.iv);
      out.form = std::move(f);
      if (n == 1) out.expert = (*best)[0];
      return out;
    }
    const mpfr_prec_t precision = keys.empty() ? 64 : keys[0].iv.lower.precision();
    mpfr_set_prec(out.iv.lower.get(), precision);
    mpfr_set_prec(out.iv.upper.get(), precision);
    // the n largest lower bounds and the n largest upper bounds, summed outwards
    for (const bool upper : {false, true}) {
      std::vector<mpfr_srcptr> b;
      for (std::size_t e : members)
        b.push_back((upper ? keys[e].iv.upper : keys[e].iv.lower).get());
      std::sort(b.begin(), b.end(),
                [](mpfr_srcptr x, mpfr_srcptr y) { return mpfr_greater_p(x, y); });
      mpfr_ptr dst = upper ? out.iv.upper.get() : out.iv.lower.get();
      const mpfr_rnd_t rnd = upper ? MPFR_RNDU : MPFR_RNDD;
      mpfr_set(dst, b[0], rnd);
      if (n == 2 && b.size() > 1) mpfr_add(dst, dst, b[1], rnd);
    }
    return out;
  }
};

std::string describeKeys(const Level& level, std::size_t i, std::size_t j, mpfr_prec_t prec) {
  return "experts " + std::to_string(i) + " and " + std::to_string(j) + ": keys " +
         level.keys[i].iv.toString() + " and " + level.keys[j].iv.toString() +
         " not separated at " + std::to_string(prec) + " bits";
}

}  // namespace

std::vector<Certified> groupScoresEnclosure(const RouteParams<float>& p,
                                            std::span<const float> logits,
                                            const EnclosureOptions& options) {
  requireRealRouteRow(p, logits);
  Level level(p, logits);
  return detail::zivLoop(
      p.groups, options,
      [&](mpfr_prec_t precision, std::vector<Certified>& out) {
        level.at(precision);
        for (std::size_t g = 0; g < p.groups; ++g) {
          if (logits.empty()) {  // E = 0: every group is empty and scores 0
            mpfr_set_zero(out[g].range.lower.get(), 1);
            mpfr_set_zero(out[g].range.upper.get(), 1);
            continue;
          }
          Quantity q = level.groupScore(g);
          mpfr_set_prec(out[g].range.lower.get(), precision);
          mpfr_set_prec(out[g].range.upper.get(), precision);
          mpfr_set(out[g].range.lower.get(), q.iv.lower.get(), MPFR_RNDD);
          mpfr_set(out[g].range.upper.get(), q.iv.upper.get(), MPFR_RNDU);
        }
      },
      "groupScoresEnclosure");
}

RouteDecision routeDecisionEnclosure(const RouteParams<float>& p, std::span<const float> logits,
                                     const EnclosureOptions& options) {
  requireRealRouteRow(p, logits);
  const std::size_t E = logits.size();
  RouteDecision d;
  // One group and one bias for all (or none): the keys are a strictly increasing function
  // of the logit, so the real order is the logits' order, which float `>` decides exactly.
  const bool oneBias =
      std::all_of(p.bias.begin(), p.bias.end(), [&](float b) { return b == p.bias[0]; });
  if (p.groups == 1 && oneBias) {
    d.decided = true;
    d.precision = 0;
    d.keptGroups.assign(1, true);
    d.eligible.assign(E, true);
    d.keptExperts = keptExperts(p.k, logits);
    d.kept.assign(E, false);
    for (std::size_t e : d.keptExperts) d.kept[e] = true;
    return d;
  }
  Level level(p, logits);
  for (mpfr_prec_t precision = options.startPrecision; precision <= options.maxPrecision;
       precision *= 2) {
    level.at(precision);
    std::pair<std::size_t, std::size_t> u;
    std::vector<bool> groupKept(p.groups, p.groups == 1);
    if (p.groups > 1) {
      std::vector<Quantity> gs;
      for (std::size_t g = 0; g < p.groups; ++g) gs.push_back(level.groupScore(g));
      std::vector<std::size_t> all(p.groups);
      for (std::size_t g = 0; g < p.groups; ++g) all[g] = g;
      const auto best = selectBest(
          p.topkGroups, all, gs,
          [&](std::size_t j, std::size_t i) {
            return beatsFrom(level.compare(gs[j], gs[i]), j, i);
          },
          u);
      if (!best) {
        d.tooClose = "groups " + std::to_string(u.first) + " and " + std::to_string(u.second) +
                     ": scores " + gs[u.first].iv.toString() + " and " +
                     gs[u.second].iv.toString() + " not separated at " + std::to_string(precision) +
                     " bits";
        continue;
      }
      for (std::size_t g : *best) groupKept[g] = true;
    }
    std::vector<bool> elig(E);
    std::vector<std::size_t> members;
    const std::size_t size = E == 0 ? 1 : E / p.groups;
    for (std::size_t e = 0; e < E; ++e) {
      elig[e] = groupKept[e / size];
      if (elig[e]) members.push_back(e);
    }
    const auto best = level.bestExperts(p.k, members, u);
    if (!best) {
      d.tooClose = describeKeys(level, u.first, u.second, precision);
      continue;
    }
    d.decided = true;
    d.tooClose.clear();
    d.precision = precision;
    d.keptGroups = std::move(groupKept);
    d.eligible = std::move(elig);
    d.kept.assign(E, false);
    for (std::size_t e : *best) d.kept[e] = true;
    d.keptExperts = *best;
    return d;
  }
  return d;
}

}  // namespace moe::oracle::certified
