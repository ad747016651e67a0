#include "moe/fuzz/dispatch_campaign.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "door_findings.hpp"
#include "moe/fuzz/dispatch_shrink.hpp"
#include "moe/fuzz/report.hpp"
#include "moe/fuzz/summary_parts.hpp"
#include "moe/oracle/dispatch.hpp"

namespace moe::fuzz {

namespace {

const char* slotBand(int64_t slots) {
  if (slots <= 0) return "0";
  if (slots < (int64_t{1} << 16)) return "1-65535";
  if (slots < (int64_t{1} << 24)) return "65536-16777215";
  return "16777216+";
}

const char* blockBand(int32_t block) {
  if (block == 1) return "1";
  if (block <= 16) return "2-16";
  if (block <= 64) return "17-64";
  return "65-256+";
}

const char* capacityBand(const DispatchCase& c) {
  if (c.capacity < 0) return "none";
  if (c.capacity == 0) return "0";
  return "limited";
}

// Output arrays without their trailing sentinels (what the kernel left alone), so that a
// reproducer of a large max_rows stays small; read back padded with the sentinel.
nlohmann::json trimmed(const std::vector<int32_t>& v) {
  size_t n = v.size();
  while (n > 0 && v[n - 1] == kDispatchUnwritten) --n;
  return std::vector<int32_t>(v.begin(), v.begin() + static_cast<int64_t>(n));
}

nlohmann::json outputJSON(const DispatchOutput& out) {
  nlohmann::json j = {{"status", out.status},
                      {"rows", out.rows},
                      {"sorted_slots", trimmed(out.sortedSlots)},
                      {"block_expert", trimmed(out.blockExpert)},
                      {"unwritten", kDispatchUnwritten}};
  if (out.fault) {
    j["fault"] = {{"kind", std::string(kindName(out.fault->kind))},
                  {"detail", out.fault->detail},
                  {"tag", out.fault->tag}};
  }
  return j;
}

std::vector<int32_t> paddedList(const nlohmann::json& j, const char* key, size_t entries) {
  if (!j.contains(key) || !j[key].is_array()) {
    throw std::invalid_argument(fmt::format("output: \"{}\" must be an array", key));
  }
  std::vector<int32_t> v = j[key].get<std::vector<int32_t>>();
  if (v.size() > entries) {
    throw std::invalid_argument(
        fmt::format("output: \"{}\" holds {} entries, the buffer {}", key, v.size(), entries));
  }
  v.resize(entries, kDispatchUnwritten);
  return v;
}

DispatchOutput outputFromJSON(const nlohmann::json& j, const DispatchCase& c) {
  if (!j.is_object()) throw std::invalid_argument("\"output\" must be an object");
  DispatchOutput out;
  out.status = j.at("status").get<int>();
  out.rows = j.at("rows").get<int32_t>();
  out.sortedSlots = paddedList(j, "sorted_slots", c.sortedEntries());
  out.blockExpert = paddedList(j, "block_expert", c.blockExpertEntries());
  if (j.contains("fault")) {
    const auto& f = j["fault"];
    const auto kind = kindFromName(f.at("kind").get<std::string>());
    if (!kind) throw std::invalid_argument("output: unknown fault kind");
    out.fault = DoorFault{*kind, f.at("detail").get<std::string>(), f.at("tag").get<std::string>()};
  }
  return out;
}

// A list told compactly: "[3, 7, 12]" or its first entries.
std::string listText(const std::vector<int32_t>& v, size_t n) {
  std::string out = "[";
  for (size_t i = 0; i < std::min<size_t>(n, v.size()); ++i) {
    if (i == 48) {
      out += fmt::format(", ... ({} more)", std::min<size_t>(n, v.size()) - 48);
      break;
    }
    out += (i ? ", " : "") +
           (v[i] == kDispatchUnwritten ? std::string("unwritten") : std::to_string(v[i]));
  }
  return out + "]";
}

std::string specText(const DispatchCase& c) {
  if (!dueStatuses(c).empty()) {
    std::string out = "outside the domain:";
    for (const DueStatus& d : dueStatuses(c)) {
      out += fmt::format(" {} ({});", dispatchStatusText(d.status), d.why);
    }
    return out;
  }
  std::vector<int64_t> ids(c.ids.begin(), c.ids.end());
  const auto C =
      c.capacity < 0 ? std::nullopt : std::optional<std::size_t>(static_cast<size_t>(c.capacity));
  const oracle::DispatchLayout l =
      oracle::dispatchSpec(static_cast<size_t>(c.experts), static_cast<size_t>(c.block), C, ids);
  std::vector<int32_t> slots(l.sortedSlots.begin(), l.sortedSlots.end());
  std::vector<int32_t> blocks(l.blockExpert.begin(), l.blockExpert.end());
  return fmt::format("rows {}, sorted_slots {}, block_expert {}", l.rows(),
                     listText(slots, slots.size()), listText(blocks, blocks.size()));
}

}  // namespace

std::string dispatchReport(const std::string& name, const DispatchCase& c,
                           const DispatchOutput& out, const DispatchVerdict& v) {
  std::string s = fmt::format("=== moe-oracle violation: {} ===\n", kindName(v.kind));
  s += fmt::format("dispatch kernel: {} (moe_dispatch_v1)\ncase: {}\n", name, dispatchShapeText(c));
  s += fmt::format("ids: {}\n", c.nullIds ? std::string("NULL") : listText(c.ids, c.ids.size()));
  s += fmt::format("spec: {}\n", specText(c));
  if (out.fault) {
    s += fmt::format("kernel: {}\n", out.fault->detail);
  } else {
    const size_t rows = out.rows >= 0 && out.rows != kDispatchUnwritten
                            ? static_cast<size_t>(out.rows)
                            : out.sortedSlots.size();
    s += fmt::format("kernel: status {}, rows {}, sorted_slots {}, block_expert {}\n", out.status,
                     out.rows, listText(out.sortedSlots, rows),
                     listText(out.blockExpert, c.block > 0 ? (rows + c.block - 1) / c.block : 0));
  }
  s += fmt::format("certificate: {}\n", v.certificate);
  s += signatureLine(name, v.kind, v.tag) + "\n";
  return s;
}

nlohmann::json dispatchReproducerFile(const Dispatcher& d, const DispatchCase& c,
                                      const DispatchOutput& out, const DispatchVerdict& v,
                                      const nlohmann::json& provenance) {
  static constexpr DoorFile kFile = {
      "moe-dispatch",
      "A dispatch violation found by moe-oracle fuzz (moe_dispatch_v1); replay with "
      "`moe-oracle replay`, tell with `moe-oracle explain`.",
      "DispatchReproducer"};
  return doorReproducerFile(kFile, v.kind, v.tag, v.certificate, d.name(), provenance,
                            {{"contract", dispatchContractJSON(d.contract())},
                             {"case", dispatchCaseJSON(c)},
                             {"output", outputJSON(out)}});
}

namespace {

// A smaller case of a kind and tag (fewer slots) replaces the kept one.
void addFinding(DispatchSummary& s, const Dispatcher& d, DispatchCase c, DispatchOutput out,
                DispatchVerdict v, const DispatchCampaignOptions& o) {
  auto smaller = [&](const DispatchFinding& kept) {
    return c.ids.size() < kept.smallest.ids.size();
  };
  auto shrunk = [&] {
    DispatchFinding f;
    f.drawn = c;
    shrinkDispatch(d, c, out, v, o.shrinkSeconds, o.stop);
    describeFinding(f, d.name(), v.kind, v.tag, dispatchReport(d.name(), c, out, v));
    f.smallest = c;
    return f;
  };
  keepFinding(s.findings, v.kind, v.tag, smaller, shrunk, [&](DispatchFinding& f) {
    f.reproducer = writeDoorReproducer(o, d.name(), "moe_dispatch_v1", v.kind, v.tag,
                                       [&](const nlohmann::json& provenance) {
                                         return dispatchReproducerFile(d, c, out, v, provenance);
                                       });
  });
}

}  // namespace

DispatchSummary runDispatchCampaign(const Dispatcher& d, const DispatchCampaignOptions& o) {
  DispatchSummary s;
  s.impl = d.name();
  s.seed = o.seed;
  s.minTokens = o.minTokens;
  s.contract = dispatchContractJSON(d.contract());
  std::mt19937_64 rng(o.seed);
  double secondsPerSlot = 0;  // the kernel's own cost, to keep large cases inside the limit
  auto step = [&](double elapsed) -> CaseEnd {
    DispatchDraw draw = o.draw;
    // A case of 2^24 slots only when the kernel's cost so far says it ends in time.
    draw.huge = draw.huge && secondsPerSlot * double(int64_t{1} << 25) < o.seconds - elapsed;
    const DispatchCase c = drawDispatchCase(rng, draw);
    DispatchOutput out;
    const DispatchVerdict v = runAndJudgeDispatch(d, c, &out);
    if (out.stopped) {
      return CaseEnd::kStopped;
    }
    ++s.cases;
    if (!out.fault && c.ids.size() >= 65536) {
      secondsPerSlot = std::max(secondsPerSlot * 0.9, out.seconds / double(c.ids.size()));
    }
    const bool inDomain = dueStatuses(c).empty();
    if (!inDomain) ++s.outsideDomain;
    if (v.abstained) {
      ++s.abstained;
      ++s.abstainReasons[v.abstainReason];
      return CaseEnd::kNext;
    }
    if (inDomain) {
      s.tokens += static_cast<uint64_t>(c.tokens);
      s.slots += c.ids.size();
      ++s.slotBands[slotBand(c.slots())];
      ++s.blocks[blockBand(c.block)];
      ++s.capacity[capacityBand(c)];
    }
    if (!v.violation()) {
      ++s.passed;
      return CaseEnd::kNext;
    }
    addFinding(s, d, c, out, v, o);
    return CaseEnd::kFinding;
  };
  runDoorLoop(s, o, step, "slots", s.slots);
  return s;
}

nlohmann::json dispatchSummaryJSON(const DispatchSummary& s) {
  nlohmann::json j = summaryHeadJSON(s);
  j["abi"] = "moe_dispatch_v1";
  j["passed"] = s.passed;
  j["slots"] = s.slots;
  j["contract"] = s.contract;
  j["coverage"].update({{"slots", countsJSON(s.slotBands)},
                        {"block", countsJSON(s.blocks)},
                        {"capacity", countsJSON(s.capacity)},
                        {"outside_domain", s.outsideDomain},
                        {"abstain_reasons", countsJSON(s.abstainReasons)}});
  j["violations"] = nlohmann::json::array();
  for (const auto& f : s.findings) {
    auto shape = [](const DispatchCase& c) {
      return nlohmann::json{{"tokens", c.tokens},     {"k", c.k},
                            {"experts", c.experts},   {"block", c.block},
                            {"capacity", c.capacity}, {"max_rows", c.maxRows}};
    };
    nlohmann::json sh = shape(f.smallest);
    sh["drawn"] = shape(f.drawn);
    j["violations"].push_back(
        findingJSON(f.signature, f.kind, f.tag, f.count, f.reproducer, std::move(sh)));
  }
  return j;
}

std::string dispatchSummaryText(const DispatchSummary& s) {
  std::string out = fmt::format(
      "moe-oracle fuzz {} (moe_dispatch_v1): seed {}, {:.1f} s, {} cases ({} passed, {} "
      "abstained, {} with a violation; {} outside the domain, their statuses judged)\n"
      "coverage (cases judged inside the domain; {} tokens, {} slots): slots{}; block{}; "
      "capacity{}\n",
      s.impl, s.seed, s.seconds, s.cases, s.passed, s.abstained, s.violationCases, s.outsideDomain,
      s.tokens, s.slots, countsText(s.slotBands), countsText(s.blocks), countsText(s.capacity));
  return out + doorSummaryEnd(s, [](const DispatchCase& c) { return dispatchShapeText(c); });
}

namespace {

struct Recorded {
  DispatchCase c;
  DispatchOutput out;
  DispatchContract contract;
  std::string kind;
};

Recorded readTest(const nlohmann::json& t) {
  Recorded r;
  r.c = dispatchCaseFromJSON(t.at("case"));
  r.out = outputFromJSON(t.at("output"), r.c);
  r.contract = parseDispatchContractJSON(t.at("contract"));
  r.kind = t.at("kind").get<std::string>();
  return r;
}

}  // namespace

ReplaySummary replayDispatchVectors(const nlohmann::json& file, const Dispatcher* impl) {
  auto rejudge = [](const Recorded& r) -> std::optional<DoorRecheck> {
    const DispatchVerdict again = judgeDispatch(r.c, r.out, r.contract.order);
    const std::string now = again.violation() ? std::string(kindName(again.kind)) : "none";
    if (now == r.kind) return std::nullopt;
    return DoorRecheck{now, again.certificate};
  };
  auto rerun = [](const Dispatcher& d, const Recorded& r) -> std::optional<DoorRecheck> {
    const DispatchVerdict v = runAndJudgeDispatch(d, r.c);
    if (!v.violation()) return std::nullopt;
    return DoorRecheck{std::string(kindName(v.kind)), v.certificate};
  };
  return replayDoorGroups(file, "DispatchReproducer", "dispatch", impl, readTest, rejudge, rerun);
}

std::string explainDispatchVectors(const nlohmann::json& file, const Dispatcher* impl,
                                   int* unexplained) {
  auto tell = [&](const nlohmann::json& t, int64_t tcId, std::string& text) {
    Recorded r = readTest(t);
    std::string name = t.value("impl", "recorded");
    if (impl) {
      name = impl->name();
      r.out = impl->run(r.c);
    }
    const DispatchVerdict v =
        judgeDispatch(r.c, r.out, impl ? impl->contract().order : r.contract.order);
    text += fmt::format("--- DispatchReproducer tcId {} ({}) ---\n", tcId,
                        impl ? "rerun" : "the recorded output");
    if (v.violation()) {
      text += dispatchReport(name, r.c, r.out, v);
    } else {
      text +=
          fmt::format("case: {}\nspec: {}\nverdict: {}\n", dispatchShapeText(r.c), specText(r.c),
                      v.abstained ? "abstained (" + v.abstainReason + ")" : "passes");
    }
  };
  return explainDoorGroups(file, "DispatchReproducer", unexplained, tell);
}

}  // namespace moe::fuzz
