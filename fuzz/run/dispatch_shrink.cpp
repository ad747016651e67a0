// Shrinking a dispatch violation: greedy, each step one change to the case, kept when the
// kernel still shows the same kind and tag (delta debugging's rule: the change that keeps
// the failure is not its cause).
#include "moe/fuzz/dispatch_shrink.hpp"

#include <algorithm>
#include <climits>

#include "moe/fuzz/run_loop.hpp"

namespace moe::fuzz {

DispatchVerdict runAndJudgeDispatch(const Dispatcher& d, const DispatchCase& c,
                                    DispatchOutput* out) {
  DispatchOutput o = d.run(c);
  DispatchVerdict v = judgeDispatch(c, o, d.contract().order);
  if (out) *out = std::move(o);
  return v;
}

namespace {

bool idsComplete(const DispatchCase& c) {
  return !c.nullIds && c.slots() >= 0 && static_cast<int64_t>(c.ids.size()) == c.slots();
}

// The tokens [from, to) of the case.
DispatchCase tokenRange(const DispatchCase& c, int32_t from, int32_t to) {
  DispatchCase s = c;
  s.tokens = to - from;
  s.ids.assign(c.ids.begin() + int64_t{from} * c.k, c.ids.begin() + int64_t{to} * c.k);
  return s;
}

// The first kk slots of each token.
DispatchCase fewerK(const DispatchCase& c, int32_t kk) {
  DispatchCase s = c;
  s.k = kk;
  s.ids.clear();
  for (int32_t t = 0; t < c.tokens; ++t) {
    for (int32_t j = 0; j < kk; ++j) s.ids.push_back(c.ids[int64_t{t} * c.k + j]);
  }
  return s;
}

// The experts renumbered in order onto 0..n-1, n the number of experts the ids name.
DispatchCase compactExperts(const DispatchCase& c) {
  DispatchCase s = c;
  std::vector<int32_t> used;
  for (int32_t id : c.ids) {
    if (id >= 0 && id < c.experts) used.push_back(id);
  }
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  for (int32_t& id : s.ids) {
    if (id >= 0 && id < c.experts) {
      id = static_cast<int32_t>(std::lower_bound(used.begin(), used.end(), id) - used.begin());
    }
  }
  s.experts = static_cast<int32_t>(used.size()) + (c.experts > static_cast<int32_t>(used.size()));
  return s;
}

// max_rows as serving engines size it, at the shrunk shape.
DispatchCase plainMaxRows(const DispatchCase& c) {
  DispatchCase s = c;
  const int64_t bound = c.slots() + int64_t{std::max(c.experts, 0)} * (std::max(c.block, 1) - 1);
  if (bound >= 0 && bound < c.maxRows) s.maxRows = static_cast<int32_t>(bound);
  return s;
}

// Slots emptied (-1, which dispatch skips) a range at a time, the ranges halving down to 64
// slots: a finding that needs its shape (an index that breaks only past 2^24 slots) keeps
// T and k, but only the slots that show it, so its reproducer stays small (runs of -1 are
// written as runs, dispatch_case.hpp). Each range size is swept once, in slot order, while
// time is left: past 2^24 slots a sweep is millions of ranges, each a copy of the case.
template <class Try, class Expired>
void emptySlotRanges(DispatchCase& c, Try&& tryCase, Expired&& expired) {
  if (!idsComplete(c) || c.ids.size() <= 256) return;
  const size_t n = c.ids.size();
  for (size_t chunk = n / 2; chunk >= 64; chunk /= 2) {
    for (size_t from = 0; from < n; from += chunk) {
      if (expired()) return;
      const auto first = c.ids.begin() + static_cast<int64_t>(from);
      const auto last = c.ids.begin() + static_cast<int64_t>(std::min(n, from + chunk));
      if (std::all_of(first, last, [](int32_t id) { return id == -1; })) continue;
      DispatchCase s = c;
      std::fill(s.ids.begin() + (first - c.ids.begin()), s.ids.begin() + (last - c.ids.begin()),
                -1);
      tryCase(s);
    }
  }
}

}  // namespace

void shrinkDispatch(const Dispatcher& d, DispatchCase& c, DispatchOutput& out, DispatchVerdict& v,
                    double seconds, const volatile std::sig_atomic_t* stop) {
  const ShrinkDeadline deadline(seconds, stop);
  const ViolationKind kind = v.kind;
  const std::string tag = v.tag;
  auto tryCase = [&](const DispatchCase& s) {
    if (deadline.passed()) return false;
    DispatchOutput o;
    DispatchVerdict w = runAndJudgeDispatch(d, s, &o);
    if (w.kind != kind || w.tag != tag) return false;
    c = s;
    out = std::move(o);
    v = std::move(w);
    return true;
  };
  bool progress = seconds > 0;
  if (progress) emptySlotRanges(c, tryCase, [&] { return deadline.passed(); });
  while (progress && !deadline.passed()) {
    progress = false;
    if (idsComplete(c) && c.tokens > 1) {
      const int32_t half = c.tokens / 2;
      if (tryCase(tokenRange(c, 0, half)) || tryCase(tokenRange(c, half, c.tokens))) {
        progress = true;
        continue;
      }
      if (c.tokens <= 64) {
        for (int32_t t = 0; t < c.tokens && !progress; ++t) {
          DispatchCase s = tokenRange(c, 0, c.tokens - 1);
          std::copy(c.ids.begin() + int64_t{t + 1} * c.k, c.ids.end(),
                    s.ids.begin() + int64_t{t} * c.k);
          progress = tryCase(s);
        }
        if (progress) continue;
      }
    }
    if (idsComplete(c) && c.k > 1) {
      if (tryCase(fewerK(c, c.k / 2)) || tryCase(fewerK(c, c.k - 1))) {
        progress = true;
        continue;
      }
    }
    if (idsComplete(c) && c.experts > 1) {
      const DispatchCase s = compactExperts(c);
      if (s.experts < c.experts && tryCase(s)) {
        progress = true;
        continue;
      }
    }
    for (int32_t b : {1, c.block / 2}) {
      if (b >= 1 && b < c.block) {
        DispatchCase s = c;
        s.block = b;
        if (tryCase(s)) {
          progress = true;
          break;
        }
      }
    }
    if (progress) continue;
    if (c.capacity >= 0) {
      DispatchCase s = c;
      s.capacity = -1;
      if (tryCase(s) || (c.capacity > 0 && tryCase([&] {
                           DispatchCase h = c;
                           h.capacity = c.capacity / 2;
                           return h;
                         }()))) {
        progress = true;
        continue;
      }
    }
    {
      const DispatchCase s = plainMaxRows(c);
      if (s.maxRows != c.maxRows && tryCase(s)) {
        progress = true;
        continue;
      }
    }
    if (idsComplete(c) && c.ids.size() <= 256) {
      for (size_t i = 0; i < c.ids.size() && !progress; ++i) {
        if (c.ids[i] == -1) continue;
        DispatchCase s = c;
        s.ids[i] = -1;
        progress = tryCase(s);
      }
    }
  }
}

}  // namespace moe::fuzz
