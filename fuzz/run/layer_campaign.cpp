#include "moe/fuzz/layer_campaign.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "door_findings.hpp"
#include "moe/fuzz/float_bits.hpp"
#include "moe/fuzz/layer_shrink.hpp"
#include "moe/fuzz/report.hpp"
#include "moe/fuzz/summary_parts.hpp"

namespace moe::fuzz {

namespace {

nlohmann::json hexValues(const std::vector<float>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (float f : v) a.push_back(hex32(f));
  return a;
}

std::vector<float> floatsOf(const nlohmann::json& j, const char* key, size_t n) {
  if (!j.contains(key) || !j[key].is_array() || j[key].size() != n) {
    throw std::invalid_argument(
        fmt::format("output: \"{}\" must be an array of {} hex32 values", key, n));
  }
  std::vector<float> v;
  for (const auto& x : j[key]) v.push_back(parseHex32(x.get<std::string>()));
  return v;
}

nlohmann::json outputJSON(const LayerOutput& out) {
  nlohmann::json j = {{"status", out.status}, {"routed", out.routed}, {"y", hexValues(out.y)}};
  if (out.routed) {
    j["ids"] = out.ids;
    j["gates"] = hexValues(out.gates);
  }
  if (out.fault) {
    j["fault"] = {{"kind", std::string(kindName(out.fault->kind))},
                  {"detail", out.fault->detail},
                  {"tag", out.fault->tag}};
  }
  return j;
}

LayerOutput outputFromJSON(const nlohmann::json& j, const LayerCase& c) {
  if (!j.is_object()) throw std::invalid_argument("\"output\" must be an object");
  LayerOutput out;
  out.status = j.at("status").get<int>();
  out.routed = j.value("routed", false);
  const size_t slots = static_cast<size_t>(c.tokens) * c.k;
  if (j.contains("fault")) {
    const auto& f = j["fault"];
    const auto kind = kindFromName(f.at("kind").get<std::string>());
    if (!kind) throw std::invalid_argument("output: unknown fault kind");
    out.fault =
        RouteFault{*kind, f.at("detail").get<std::string>(), f.at("tag").get<std::string>()};
    return out;
  }
  out.y = floatsOf(j, "y", static_cast<size_t>(c.tokens) * c.hidden);
  if (out.routed) {
    out.ids = j.at("ids").get<std::vector<int32_t>>();
    if (out.ids.size() != slots) throw std::invalid_argument("output: \"ids\" has the wrong size");
    out.gates = floatsOf(j, "gates", slots);
  }
  out.abstained = out.status != 0;
  if (out.abstained) out.abstainReason = fmt::format("returned {}", out.status);
  return out;
}

}  // namespace

std::string layerReport(const std::string& name, const LayerCase& c, const LayerCaseResult& r) {
  const LayerVerdict& v = *r.violation;
  std::string s = fmt::format("=== moe-oracle violation: {} ===\n", kindName(v.kind));
  s += fmt::format("layer kernel: {} (moe_layer_v1)\ncase: {}; routing {}\n", name,
                   layerShapeText(c), r.output.routed ? "returned (ids, gates)" : "not asked");
  if (r.output.fault) {
    s += fmt::format("kernel: {}\n", r.output.fault->detail);
  } else if (v.token >= 0) {
    s += fmt::format("token {}", v.token);
    if (v.coordinate >= 0 && v.coordinate < c.hidden) {
      const float y = r.output.y[static_cast<size_t>(v.token) * c.hidden + v.coordinate];
      s += fmt::format(", coordinate {}: y = {:.9g} ({})", v.coordinate, y, hex32(y));
    }
    s += v.expert >= 0 ? fmt::format(", expert {}", v.expert) : ", expert not isolated";
    if (v.margin > 0) s += fmt::format("; {:.3g} times the budget", v.margin);
    s += "\n";
  }
  s += fmt::format("certificate: {}\n", v.certificate);
  s += signatureLine(name, v.kind, v.tag) + "\n";
  return s;
}

nlohmann::json layerReproducerFile(const LayerKernel& kernel, const LayerCase& c, bool withRouting,
                                   const LayerCaseResult& r, const nlohmann::json& provenance) {
  static constexpr DoorFile kFile = {
      "moe-layer",
      "A fused-layer violation found by moe-oracle fuzz (moe_layer_v1); replay with "
      "`moe-oracle replay`, tell with `moe-oracle explain`. Values are binary32 bits.",
      "LayerReproducer"};
  const LayerVerdict& v = *r.violation;
  const nlohmann::json fields = {{"token", v.token},
                                 {"expert", v.expert},
                                 {"coordinate", v.coordinate},
                                 {"routed", withRouting},
                                 {"contract", contractJSON(kernel.contract())},
                                 {"case", layerCaseJSON(c)},
                                 {"output", outputJSON(r.output)}};
  return doorReproducerFile(kFile, v.kind, v.tag, v.certificate, kernel.name(), provenance, fields);
}

namespace {

// The first case of a kind and tag is shrunk and kept; the others are counted.
void addFinding(LayerSummary& s, const LayerKernel& kernel, LayerCase c, bool routed,
                LayerCaseResult r, Judge& judge, const LayerCampaignOptions& o) {
  const LayerVerdict v = *r.violation;
  auto shrunk = [&] {
    LayerFinding f;
    f.drawn = layerShapeText(c);
    shrinkLayer(kernel, c, routed, r, judge, o.shrinkSeconds, o.stop);
    describeFinding(f, kernel.name(), r.violation->kind, r.violation->tag,
                    layerReport(kernel.name(), c, r));
    f.smallest = layerShapeText(c);
    return f;
  };
  auto write = [&](LayerFinding& f) {
    f.reproducer = writeDoorReproducer(
        o, kernel.name(), "moe_layer_v1", f.kind, f.tag, [&](const nlohmann::json& provenance) {
          return layerReproducerFile(kernel, c, routed, r, provenance);
        });
  };
  keepFinding(
      s.findings, v.kind, v.tag, [](const LayerFinding&) { return false; }, shrunk, write);
}

// A judged case in the coverage, and its verdict unless a violation (counted by the finding).
void countJudged(LayerSummary& s, const DrawnLayer& d, bool routed, const LayerCaseResult& r) {
  s.tokens += r.tokens.size();
  ++s.styles[d.style];
  ++s.shapes[d.shape];
  ++s.dtypes[layerDtypeName(d.c.dtype)];
  ++s.routing[std::string(routed ? "returned" : "not-asked") + (d.c.family ? "+family" : "")];
  if (r.violation) return;
  if (r.worst() != Outcome::kAcceptable) {
    ++s.passed;
    return;
  }
  ++s.acceptable;
  for (const auto& v : r.tokens) {
    if (v.outcome == Outcome::kAcceptable) ++s.acceptableReasons[v.reason];
  }
}

}  // namespace

LayerSummary runLayerCampaign(const LayerKernel& kernel, const LayerCampaignOptions& o) {
  using Clock = std::chrono::steady_clock;  // a case's own cost
  LayerSummary s;
  s.impl = kernel.name();
  s.seed = o.seed;
  s.minTokens = o.minTokens;
  s.contract = contractJSON(kernel.contract());
  SeededSource src(o.seed);
  SeededSource badCalls(o.seed ^ 0xbadca11ULL);  // its own bytes: drawBadCall
  Judge judge;
  double secondsPerWork = 0;  // the judge's and kernel's cost so far, to keep cases in time
  auto step = [&](double elapsed) -> CaseEnd {
    LayerDraw draw = o.draw;
    // A case may cost at most a tenth of the time left (never less than the smallest).
    if (secondsPerWork > 0) {
      const double left = std::max(0.0, o.seconds - elapsed);
      draw.maxWork = std::clamp<int64_t>(static_cast<int64_t>(0.1 * left / secondsPerWork),
                                         int64_t{1} << 12, draw.maxWork);
    }
    DrawnLayer d = drawLayerCase(src, draw);
    if (drawBadCall(badCalls, d.c, draw)) d.style = "bad-call";
    const LayerCase& c = d.c;
    const bool routed = (src.u8() & 1) != 0;
    const auto caseStart = Clock::now();
    LayerCaseResult r = runAndJudgeLayer(kernel, c, routed, judge);
    if (r.output.stopped) {
      return CaseEnd::kStopped;
    }
    const double work = double(c.tokens) * c.k * 3.0 * c.hidden * c.intermediate + 1;
    const double took = std::chrono::duration<double>(Clock::now() - caseStart).count();
    secondsPerWork = std::max(secondsPerWork * 0.9, took / work);
    ++s.cases;
    if (r.abstained) {
      ++s.abstained;
      ++s.abstainReasons[r.abstainReason];
      return CaseEnd::kNext;
    }
    countJudged(s, d, routed, r);
    if (!r.violation) return CaseEnd::kNext;
    addFinding(s, kernel, c, routed, std::move(r), judge, o);
    return CaseEnd::kFinding;
  };
  runDoorLoop(s, o, step, "tokens", s.tokens);
  return s;
}

nlohmann::json layerSummaryJSON(const LayerSummary& s) {
  nlohmann::json j = summaryHeadJSON(s);
  j.update({{"abi", "moe_layer_v1"},
            {"passed", s.passed},
            {"acceptable", s.acceptable},
            {"contract", s.contract}});
  j["coverage"].update({{"styles", countsJSON(s.styles)},
                        {"shapes", countsJSON(s.shapes)},
                        {"dtype", countsJSON(s.dtypes)},
                        {"routing", countsJSON(s.routing)},
                        {"acceptable_reasons", countsJSON(s.acceptableReasons)},
                        {"abstain_reasons", countsJSON(s.abstainReasons)}});
  j["violations"] = nlohmann::json::array();
  for (const auto& f : s.findings) {
    nlohmann::json finding =
        findingJSON(f.signature, f.kind, f.tag, f.count, f.reproducer, f.smallest);
    finding["drawn"] = f.drawn;
    j["violations"].push_back(std::move(finding));
  }
  return j;
}

std::string layerSummaryText(const LayerSummary& s) {
  std::string out = fmt::format(
      "moe-oracle fuzz {} (moe_layer_v1): seed {}, {:.1f} s, {} cases ({} passed, {} "
      "acceptable, {} abstained, {} with a violation)\n"
      "coverage ({} tokens judged): values{}; shapes{}; dtype{}; routing{}\n",
      s.impl, s.seed, s.seconds, s.cases, s.passed, s.acceptable, s.abstained, s.violationCases,
      s.tokens, countsText(s.styles), countsText(s.shapes), countsText(s.dtypes),
      countsText(s.routing));
  if (s.acceptable > 0)
    out += fmt::format("acceptable tokens:{}\n", countsText(s.acceptableReasons));
  return out + doorSummaryEnd(s, [](const std::string& shape) { return shape; });
}

namespace {

struct Recorded {
  LayerCase c;
  LayerOutput out;
  Contract contract;
  bool routed = false;
  std::string kind;
};

Recorded readTest(const nlohmann::json& t) {
  Recorded r;
  r.c = layerCaseFromJSON(t.at("case"));
  r.routed = t.value("routed", false);
  r.out = outputFromJSON(t.at("output"), r.c);
  r.contract = parseContractJSON(t.at("contract"));
  if (!r.contract.isLayer()) throw std::invalid_argument("\"contract\" is not a moe_layer_v1 one");
  r.kind = t.at("kind").get<std::string>();
  return r;
}

}  // namespace

ReplaySummary replayLayerVectors(const nlohmann::json& file, const LayerKernel* impl) {
  Judge judge;
  // The recorded output, judged again without the kernel: no rerun, so a cause that
  // needs one may now be told as expert-output; it must still be a violation.
  auto rejudge = [&](const Recorded& r) -> std::optional<DoorRecheck> {
    if (judgeLayerOutput(r.c, r.out, r.contract, judge, LayerRerun{}).violation) {
      return std::nullopt;
    }
    return DoorRecheck{"to pass", "the recorded output is now judged to pass"};
  };
  auto rerun = [&](const LayerKernel& kernel, const Recorded& r) -> std::optional<DoorRecheck> {
    const LayerCaseResult v = runAndJudgeLayer(kernel, r.c, r.routed, judge);
    if (!v.violation) return std::nullopt;
    return DoorRecheck{std::string(kindName(v.violation->kind)), v.violation->certificate};
  };
  return replayDoorGroups(file, "LayerReproducer", "layer", impl, readTest, rejudge, rerun);
}

std::string explainLayerVectors(const nlohmann::json& file, const LayerKernel* impl,
                                int* unexplained) {
  Judge judge;
  auto tell = [&](const nlohmann::json& t, int64_t tcId, std::string& text) {
    const Recorded r = readTest(t);
    const std::string name = impl ? impl->name() : t.value("impl", "recorded");
    const LayerCaseResult v = impl ? runAndJudgeLayer(*impl, r.c, r.routed, judge)
                                   : judgeLayerOutput(r.c, r.out, r.contract, judge, LayerRerun{});
    text += fmt::format("--- LayerReproducer tcId {} ({}; recorded as {}) ---\n", tcId,
                        impl ? "rerun" : "the recorded output", r.kind);
    if (v.violation) {
      text += layerReport(name, r.c, v);
    } else {
      text += fmt::format("case: {}\nverdict: {}\n", layerShapeText(r.c),
                          v.abstained ? "abstained (" + v.abstainReason + ")" : "passes");
    }
  };
  return explainDoorGroups(file, "LayerReproducer", unexplained, tell);
}

}  // namespace moe::fuzz
