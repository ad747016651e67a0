// reproducerSnippet (snippet.hpp): a reproducer told as a program for a bug report. The
// spec's answer comes from the oracle functions describeToken (token_text.cpp) prints from,
// and the offending token and certificate from the one Judge, as `moe-oracle explain` finds
// them, so that the snippet and the explanation never disagree.
#include "moe/fuzz/snippet.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>
#include <vector>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/contract.hpp"
#include "moe/fuzz/dispatch_snippet.hpp"
#include "moe/fuzz/family_params.hpp"
#include "moe/fuzz/float_bits.hpp"
#include "moe/fuzz/layer_snippet.hpp"
#include "moe/fuzz/report.hpp"
#include "moe/fuzz/vectors.hpp"
#include "moe/fuzz/verdict.hpp"
#include "moe/fuzz/violation_kind.hpp"
#include "moe/oracle/certified/family.hpp"
#include "moe/oracle/certified/gates.hpp"
#include "moe/oracle/routing.hpp"
#include "snippet_parts.hpp"

namespace moe::fuzz {

namespace {

// The NaN that float('nan') and C's NAN give as binary32; any other NaN needs its bits.
constexpr uint32_t kQuietNaN = 0x7fc00000u;

// A binary32 widened to binary64 is exact, and so is its %a spelling: every binary32,
// subnormals included, is a normal binary64 with at most 24 significant bits.
std::string hexDigits(float x) {
  return fmt::format("{:a}", static_cast<double>(x));
}

// What the spec owes for one token: k slots, the kept experts best first then -1, their
// exact gates correctly rounded to binary32 then 0; or why there is no such answer.
struct SpecAnswer {
  std::string none;
  std::vector<int32_t> ids;
  std::vector<float> gates;
  std::vector<std::pair<double, double>> ranges;  // the exact gates of the kept slots
};

void pad(SpecAnswer& a, int32_t k) {
  a.ids.resize(static_cast<size_t>(std::max(k, 0)), -1);
  a.gates.resize(a.ids.size(), 0.0f);
}

SpecAnswer specV1(std::span<const float> x, int32_t k) {
  SpecAnswer a;
  if (!oracle::certified::isRealRow(x)) {
    a.none =
        "the row is not real (NaN, +inf or all -inf): the spec fixes only the structure "
        "(distinct ids in range, then -1 and gate 0)";
    return a;
  }
  const auto kept = oracle::keptExperts(static_cast<size_t>(std::max(k, 0)), x);
  const auto exact = oracle::certified::keptGatesEnclosure(x, kept);
  for (size_t s = 0; s < kept.size(); ++s) {
    a.ids.push_back(static_cast<int32_t>(kept[s]));
    a.gates.push_back(exact[s].f32);
    a.ranges.emplace_back(exact[s].range.lowerDouble(), exact[s].range.upperDouble());
  }
  pad(a, k);
  return a;
}

SpecAnswer specFamily(std::span<const float> x, const Family& f, int32_t k) {
  SpecAnswer a;
  const auto E = static_cast<int32_t>(x.size());
  const std::string invalid = familyInvalidReason(f, E);
  if (!invalid.empty()) {
    a.none = fmt::format(
        "parameters outside the domain ({}): the router must return MOE_ROUTE_EBADPARAMS and "
        "write nothing",
        invalid);
    return a;
  }
  if (E == 0) {  // every slot empty
    pad(a, k);
    return a;
  }
  const oracle::RouteParams<float> p = familyRouteParams(f, std::max(k, 0));
  if (!oracle::certified::isRealRouteRow(p, x)) {
    a.none = "the row is not real: the spec fixes only the structure";
    return a;
  }
  const auto spec = oracle::certified::routeGatesEnclosure(p, x);
  if (!spec.decision.decided) {
    a.none = "the spec's decision abstains: " + spec.decision.tooClose;
    return a;
  }
  for (size_t e : spec.decision.keptExperts) {
    a.ids.push_back(static_cast<int32_t>(e));
    a.gates.push_back(spec.gates[e].f32);
    a.ranges.emplace_back(spec.gates[e].range.lowerDouble(), spec.gates[e].range.upperDouble());
  }
  pad(a, k);
  return a;
}

// One RouterReproducer test, read and judged as `moe-oracle explain` does.
struct Finding {
  int64_t tcId = 0;
  std::string impl, kind, certificate;
  std::vector<std::string> judgedWith;
  Case c;
  bool fault = false;  // a call fault: no recorded output
  std::vector<int32_t> ids;
  std::vector<float> gates;
  int32_t token = 0;
  SpecAnswer spec;
};

Finding readFinding(const nlohmann::json& t) {
  Finding f;
  f.tcId = t.value("tcId", int64_t{0});
  f.impl = t.value("impl", std::string("?"));
  f.c = caseOfReproducer(t);
  const Contract contract = t.contains("contract") ? parseContractJSON(t["contract"]) : Contract{};
  Judge judge(recordedConfig(t, VerdictConfig{}, &f.judgedWith));
  f.kind = t.value("kind", std::string());
  f.certificate = t.value("certificate", std::string());
  const auto recorded = kindFromName(f.kind);
  f.fault = recorded && isCallFault(*recorded);
  f.token = t.value("token", 0);
  if (!f.fault) {
    if (!t.contains("ids") || !t.contains("gates")) {
      throw std::invalid_argument("test: a recorded output needs \"ids\" and \"gates\"");
    }
    f.ids = t["ids"].get<std::vector<int32_t>>();
    for (const auto& x : t["gates"]) f.gates.push_back(parseHex32(x.get<std::string>()));
    const size_t slots = static_cast<size_t>(f.c.tokens) * static_cast<size_t>(f.c.k);
    if (f.ids.size() != slots || f.gates.size() != slots) {
      throw std::invalid_argument("ids/gates must hold tokens * k entries");
    }
    const CaseResult r = judge.recorded(f.c, f.ids, f.gates, contract);
    if (r.violation) {
      f.token = r.violation->token;
      f.kind = kindName(r.violation->kind);
      f.certificate = r.violation->certificate;
    }
  }
  if (f.c.tokens == 0) return f;
  f.token = std::clamp(f.token, 0, f.c.tokens - 1);
  try {
    f.spec = f.c.family ? specFamily(f.c.row(f.token), *f.c.family, f.c.k)
                        : specV1(f.c.row(f.token), f.c.k);
  } catch (const std::exception& e) {
    f.spec = SpecAnswer{fmt::format("no exact answer: {}", e.what()), {}, {}, {}};
  }
  // Any slot order: the spec's kept set shown in the router's order when they agree, so that
  // the gates are compared slot by slot.
  if (contract.slotOrder == SlotOrder::kAny && f.spec.none.empty() && !f.fault) {
    const size_t k = static_cast<size_t>(f.c.k);
    const size_t n = f.spec.ranges.size();
    const auto got = std::span<const int32_t>(f.ids).subspan(f.token * k, n);
    if (std::is_permutation(got.begin(), got.end(), f.spec.ids.begin())) {
      SpecAnswer ordered = f.spec;
      for (size_t s = 0; s < n; ++s) {
        const size_t from = static_cast<size_t>(
            std::find(f.spec.ids.begin(), f.spec.ids.begin() + n, got[s]) - f.spec.ids.begin());
        ordered.ids[s] = f.spec.ids[from];
        ordered.gates[s] = f.spec.gates[from];
        ordered.ranges[s] = f.spec.ranges[from];
      }
      f.spec = std::move(ordered);
    }
  }
  return f;
}

std::string oneLine(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  return s;
}

// Text that stays inside a /* */ comment.
std::string cComment(const std::string& s) {
  std::string out = oneLine(s);
  for (size_t at = 0; (at = out.find("*/", at)) != std::string::npos;) out.replace(at, 2, "* /");
  return out;
}

// A quoted literal; `quote` is ' (Python: " when the text holds a ' and no ") or " (C).
// UTF-8 bytes go through as they are.
std::string literal(std::string_view s, char quote) {
  if (quote == '\'' && s.find('\'') != std::string_view::npos &&
      s.find('"') == std::string_view::npos) {
    quote = '"';
  }
  std::string out(1, quote);
  for (const char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == quote || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (ch == '\n') {
      out += "\\n";
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\{:03o}", u);  // octal: both languages stop after three digits
    } else {
      out += ch;
    }
  }
  out += quote;
  return out;
}

template <class T, class Spell>
void writeList(fmt::memory_buffer& out, std::span<const T> values, Spell spell, size_t perLine,
               const char* indent) {
  for (size_t i = 0; i < values.size(); ++i) {
    fmt::format_to(std::back_inserter(out), "{}{},", i % perLine == 0 ? indent : " ",
                   spell(values[i]));
    if (i % perLine == perLine - 1 || i + 1 == values.size()) {
      fmt::format_to(std::back_inserter(out), "\n");
    }
  }
}

std::string scoreName(ScoreFunction score, bool python) {
  if (score == ScoreFunction::kSoftmax) return python ? "'softmax'" : "MOE_SCORE_SOFTMAX";
  if (score == ScoreFunction::kSigmoid) return python ? "'sigmoid'" : "MOE_SCORE_SIGMOID";
  // Outside the ABI's enum: the raw value the call passed.
  return fmt::format("{}", static_cast<int32_t>(score));
}

std::string groupScoreName(GroupScoreFunction groupScore, bool python) {
  if (groupScore == GroupScoreFunction::kMax) return python ? "'max'" : "MOE_GROUP_MAX";
  if (groupScore == GroupScoreFunction::kTop2Sum) {
    return python ? "'top2_sum'" : "MOE_GROUP_TOP2_SUM";
  }
  return fmt::format("{}", static_cast<int32_t>(groupScore));
}

std::string headline(const Finding& f) {
  return fmt::format(
      "moe-oracle finding: {} in {} (tcId {}): T = {} tokens, E = {} experts, k = {}",
      f.kind.empty() ? std::string("violation") : f.kind, f.impl, f.tcId, f.c.tokens, f.c.experts,
      f.c.k);
}

std::string specLine(const Finding& f) {
  return f.c.family ? "the spec's answer (moe_route_v2's routeGates over the reals)"
                    : "the spec's answer (the exact top-k softmax over the reals)";
}

// ---------------------------------------------------------------- Python

void pyFloats(fmt::memory_buffer& out, const std::string& name, std::span<const float> v,
              const std::string& shape) {
  fmt::format_to(std::back_inserter(out), "{} = torch.tensor([\n", name);
  writeList(
      out, v, [](float x) { return pythonFloat(x); }, 3, "    ");
  fmt::format_to(std::back_inserter(out), "], dtype=torch.float32).reshape({})\n", shape);
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i]) && bitsOf(v[i]) != kQuietNaN) {
      fmt::format_to(std::back_inserter(out),
                     "{}.view(torch.int32).view(-1)[{}] = {}  # the NaN {} bit for bit\n", name, i,
                     static_cast<int32_t>(bitsOf(v[i])), hex32(v[i]));
    }
  }
}

void pythonSnippet(fmt::memory_buffer& out, const Finding& f) {
  const Case& c = f.c;
  auto line = [&](const std::string& s) { fmt::format_to(std::back_inserter(out), "{}\n", s); };
  line("# " + oneLine(headline(f)));
  line("# certificate: " + oneLine(f.certificate));
  for (const auto& said : f.judgedWith) line("# judged with " + oneLine(said));
  line("import torch");
  line("");
  line(fmt::format("T, E, k = {}, {}, {}", c.tokens, c.experts, c.k));
  line("# the logits [T, E], exact: float.fromhex spells every binary32");
  pyFloats(out, "logits", c.logits, "T, E");
  if (c.family) {
    const Family& fam = *c.family;
    line("# the routing family (moe_route_v2's moe_route_params_v2), as moe_oracle.judge takes it");
    if (fam.bias.empty()) {
      line("bias = None");
    } else {
      pyFloats(out, "bias", fam.bias, "E");
    }
    line(fmt::format(
        "family = dict(score={}, bias=bias, groups={}, topk_groups={}, group_score={},\n"
        "              renormalize={}, scale={})",
        scoreName(fam.score, true), fam.groups, fam.topkGroups,
        groupScoreName(fam.groupScore, true),
        fam.renormalize == 1   ? "True"
        : fam.renormalize == 0 ? "False"
                               : std::to_string(fam.renormalize),
        pythonFloat(fam.scale)));
    if (fam.structShort > 0) {
      line(fmt::format("# struct_size: {} bytes short of sizeof(moe_route_params_v2)",
                       fam.structShort));
    }
  }
  line("");
  if (f.fault) {
    line(fmt::format(
        "# No recorded output: the finding is the call itself ({}). Call the router on these",
        f.kind));
    line(c.family ? "# logits and family to see it again." : "# logits to see it again.");
    line(fmt::format("print({})", literal(fmt::format("moe-oracle: {} of {} on this case: {}",
                                                      f.kind, f.impl, oneLine(f.certificate)),
                                          '\'')));
    return;
  }
  line("# the router's recorded output [T, k]: ids, and gates as exact binary32");
  fmt::format_to(std::back_inserter(out), "got_ids = torch.tensor([\n");
  writeList(
      out, std::span<const int32_t>(f.ids), [](int32_t v) { return fmt::format("{}", v); }, 16,
      "    ");
  line("], dtype=torch.int32).reshape(T, k)");
  pyFloats(out, "got_gates", f.gates, "T, k");
  line("");
  if (c.tokens == 0) {
    line(fmt::format(
        "print({})",
        literal("moe-oracle: no tokens in this case: " + oneLine(f.certificate), '\'')));
    return;
  }
  line(fmt::format("token = {}", f.token));
  line("got_ids_t = got_ids[token].tolist()");
  line("got_gates_t = got_gates[token].tolist()");
  line(fmt::format("certificate = {}", literal(oneLine(f.certificate), '\'')));
  line("print(f'token {token}: got ids        {got_ids_t}')");
  line("print(f'token {token}: got gates      {[g.hex() for g in got_gates_t]}')");
  if (!f.spec.none.empty()) {
    line(fmt::format("# {}: {}", specLine(f), oneLine(f.spec.none)));
    line("expected_ids = None");
    line(fmt::format(
        "print({})",
        literal("token " + std::to_string(f.token) + ": the spec: " + oneLine(f.spec.none), '\'')));
    line(fmt::format("raise AssertionError({})",
                     literal("moe-oracle: " + f.kind + ": ", '\'') + " + certificate"));
    return;
  }
  line(fmt::format("# {} for this token:", specLine(f)));
  line("# the kept experts best first, then -1; their exact gates correctly rounded to binary32,");
  line("# then 0");
  fmt::format_to(std::back_inserter(out), "expected_ids = [{}]\n", fmt::join(f.spec.ids, ", "));
  fmt::format_to(std::back_inserter(out), "expected_gates = [\n");
  writeList(
      out, std::span<const float>(f.spec.gates), [](float x) { return pythonFloat(x); }, 3, "    ");
  line("]");
  for (size_t s = 0; s < f.spec.ranges.size(); ++s) {
    line(fmt::format("# slot {} expert {}: the exact gate is in [{:.17g}, {:.17g}]", s,
                     f.spec.ids[s], f.spec.ranges[s].first, f.spec.ranges[s].second));
  }
  line("print(f'token {token}: expected ids   {expected_ids}')");
  line("print(f'token {token}: expected gates {[g.hex() for g in expected_gates]}')");
  if (f.kind == "batch-variance") {
    line("# batch-variance: each token alone is judged fine; the difference shows only when the");
    line("# router is rerun on the batch split or with another thread count.");
    line("print('moe-oracle: batch-variance: ' + certificate)");
    return;
  }
  line("# The spec allows the gates the budget the certificate names around the exact values;");
  line("# the ids must be the spec's (exact ties go to the lower index).");
  line("assert got_ids_t == expected_ids and got_gates_t == expected_gates, \\");
  line(fmt::format("    {} + certificate", literal("moe-oracle: " + f.kind + ": ", '\'')));
}

// ---------------------------------------------------------------- C

void cFloats(fmt::memory_buffer& out, const std::string& decl, std::span<const float> v,
             int32_t rows, size_t rowLength) {
  fmt::format_to(std::back_inserter(out), "{} = {{\n", decl);
  if (v.empty()) {
    fmt::format_to(std::back_inserter(out), "    0 /* none: an array needs one element */\n");
  } else if (rows <= 1 || rowLength == 0) {
    writeList(
        out, v, [](float x) { return cFloat(x); }, 4, "    ");
  } else {
    for (int32_t t = 0; t < rows; ++t) {
      fmt::format_to(std::back_inserter(out), "    /* token {} */\n", t);
      writeList(
          out, v.subspan(static_cast<size_t>(t) * rowLength, rowLength),
          [](float x) { return cFloat(x); }, 4, "    ");
    }
  }
  fmt::format_to(std::back_inserter(out), "}};\n");
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i]) && bitsOf(v[i]) != kQuietNaN) {
      fmt::format_to(std::back_inserter(out), "/* [{}]: the NaN {} (NAN spells another NaN) */\n",
                     i, hex32(v[i]));
    }
  }
}

void cInts(fmt::memory_buffer& out, const std::string& decl, std::span<const int32_t> v) {
  fmt::format_to(std::back_inserter(out), "{} = {{\n", decl);
  if (v.empty()) {
    fmt::format_to(std::back_inserter(out), "    0 /* none: an array needs one element */\n");
  } else {
    writeList(
        out, v, [](int32_t x) { return fmt::format("{}", x); }, 16, "    ");
  }
  fmt::format_to(std::back_inserter(out), "}};\n");
}

size_t atLeastOne(size_t n) {
  return std::max<size_t>(n, 1);
}

// Declarations and a function `int finding<suffix>(void)` returning 1 when the router's
// answer differs from the spec's (or the call failed), 0 otherwise.
void cSnippet(fmt::memory_buffer& out, const Finding& f, const std::string& suffix) {
  const Case& c = f.c;
  auto line = [&](const std::string& s) { fmt::format_to(std::back_inserter(out), "{}\n", s); };
  auto name = [&](const char* base) { return std::string(base) + suffix; };
  const size_t T = static_cast<size_t>(c.tokens), E = static_cast<size_t>(c.experts),
               K = static_cast<size_t>(c.k);
  line("/* " + cComment(headline(f)));
  line(" * certificate: " + cComment(f.certificate));
  for (const auto& said : f.judgedWith) line(" * judged with " + cComment(said));
  line(" */");
  line("/* the logits [T * E], exact: a hex float literal spells every binary32 */");
  cFloats(out, fmt::format("static const float {}[{}]", name("logits"), atLeastOne(T * E)),
          c.logits, c.tokens, E);
  if (c.family) {
    const Family& fam = *c.family;
    if (!fam.bias.empty()) {
      cFloats(out, fmt::format("static const float {}[{}]", name("bias"), fam.bias.size()),
              fam.bias, 1, 0);
    }
    line("/* the routing family, as the call passes it */");
    line(fmt::format("static const moe_route_params_v2 {} = {{", name("params")));
    line(fmt::format("    .struct_size = sizeof(moe_route_params_v2){},",
                     fam.structShort > 0 ? fmt::format(" - {}", fam.structShort) : ""));
    line(fmt::format("    .tokens = {},", c.tokens));
    line(fmt::format("    .experts = {},", c.experts));
    line(fmt::format("    .k = {},", c.k));
    line(fmt::format("    .score = {},", scoreName(fam.score, false)));
    line(fmt::format("    .bias = {},", fam.bias.empty() ? "NULL" : name("bias")));
    line(fmt::format("    .groups = {},", fam.groups));
    line(fmt::format("    .topk_groups = {},", fam.topkGroups));
    line(fmt::format("    .group_score = {},", groupScoreName(fam.groupScore, false)));
    line(fmt::format("    .renormalize = {},", fam.renormalize));
    line(fmt::format("    .scale = {},", cFloat(fam.scale)));
    line("};");
  }
  if (!f.fault) {
    line("/* the router's recorded output [T * k]: ids, and gates as exact binary32 */");
    cInts(out, fmt::format("static const int32_t {}[{}]", name("got_ids"), atLeastOne(T * K)),
          f.ids);
    cFloats(out, fmt::format("static const float {}[{}]", name("got_gates"), atLeastOne(T * K)),
            f.gates, c.tokens, K);
  }
  const bool compare = !f.fault && T > 0 && f.spec.none.empty();
  if (compare) {
    line(fmt::format("/* {} for token {}:", specLine(f), f.token));
    line(" * the kept experts best first, then -1; their exact gates correctly rounded to");
    line(" * binary32, then 0 */");
    cInts(out, fmt::format("static const int32_t {}[{}]", name("expected_ids"), atLeastOne(K)),
          f.spec.ids);
    cFloats(out, fmt::format("static const float {}[{}]", name("expected_gates"), atLeastOne(K)),
            f.spec.gates, 1, 0);
    for (size_t s = 0; s < f.spec.ranges.size(); ++s) {
      line(fmt::format("/* slot {} expert {}: the exact gate is in [{:.17g}, {:.17g}] */", s,
                       f.spec.ids[s], f.spec.ranges[s].first, f.spec.ranges[s].second));
    }
  } else if (!f.fault && T > 0) {
    line(fmt::format("/* {}: {} */", specLine(f), cComment(f.spec.none)));
  }
  line("");
  line(fmt::format("static int {}(void) {{", name("finding")));
  line(fmt::format("  const int experts = {}, token = {};", c.experts, f.token));
  line(fmt::format("  const char* certificate = {};", literal(oneLine(f.certificate), '"')));
  line(fmt::format("  printf(\"%s\\n\", {});", literal(oneLine(headline(f)), '"')));
  if (T > 0) {
    line("  printf(\"logits of token %d:\", token);");
    line(
        fmt::format("  for (int e = 0; e < experts; ++e) printf(\" %a\", (double){}[token * "
                    "experts + e]);",
                    name("logits")));
    line("  printf(\"\\n\");");
  } else {
    line("  (void)experts;");
    line("  (void)token;");
    line(fmt::format("  (void){};", name("logits")));
  }
  if (c.family) {
    const std::string p = name("params");
    line(
        fmt::format("  printf(\"family: score %d, groups %d, topk_groups %d, group_score %d, "
                    "renormalize %d, scale %a, bias\", (int){0}.score, (int){0}.groups, "
                    "(int){0}.topk_groups, (int){0}.group_score, (int){0}.renormalize, "
                    "(double){0}.scale);",
                    p));
    line(fmt::format("  if (!{0}.bias) printf(\" NULL\");", p));
    line(
        fmt::format("  for (int e = 0; {0}.bias && e < experts; ++e) printf(\" %a\", "
                    "(double){0}.bias[e]);",
                    p));
    line("  printf(\"\\n\");");
  }
  if (f.fault) {
    line(
        fmt::format("  /* No recorded output: the finding is the call itself ({}). Call the router "
                    "on this case to",
                    cComment(f.kind)));
    line("     see it again. */");
    line("  printf(\"no recorded output: %s\\n\", certificate);");
    line("  return 1;");
    line("}");
    return;
  }
  if (!compare) {
    line("  printf(\"the spec's answer: %s\\n\", " +
         literal(T > 0 ? oneLine(f.spec.none) : std::string("no tokens in this case"), '"') + ");");
    line("  printf(\"violation: %s\\n\", certificate);");
    line("  return 1;");
    line("}");
    return;
  }
  line(fmt::format("  const int k = {};", c.k));
  line("  int differ = 0;");
  line("  for (int s = 0; s < k; ++s) {");
  line(fmt::format("    const int32_t id = {}[token * k + s];", name("got_ids")));
  line(fmt::format("    const float gate = {}[token * k + s];", name("got_gates")));
  line(
      fmt::format("    printf(\"slot %d: expected id %d gate %a, got id %d gate %a\\n\", s, "
                  "(int){0}[s], (double){1}[s], (int)id, (double)gate);",
                  name("expected_ids"), name("expected_gates")));
  line(fmt::format("    if (id != {}[s] || gate != {}[s]) differ = 1;", name("expected_ids"),
                   name("expected_gates")));
  line("  }");
  if (f.kind == "batch-variance") {
    line("  /* batch-variance: each token alone is judged fine; the difference shows only when");
    line("     the router is rerun on the batch split or with another thread count. */");
    line("  printf(\"batch-variance: %s\\n\", certificate);");
    line("  return differ;");
  } else {
    line("  /* The spec allows the gates the budget the certificate names around the exact");
    line("     values; the ids must be the spec's (exact ties go to the lower index). */");
    line(
        "  if (differ) printf(\"the router's answer differs from the spec's: %s\\n\", "
        "certificate);");
    line("  return differ;");
  }
  line("}");
}

}  // namespace

std::string pythonFloat(float x) {
  if (std::isnan(x)) return "float('nan')";
  if (std::isinf(x)) return x > 0 ? "float('inf')" : "float('-inf')";
  return fmt::format("float.fromhex('{}')", hexDigits(x));
}

std::string cFloat(float x) {
  if (std::isnan(x)) return std::signbit(x) ? "-NAN" : "NAN";
  if (std::isinf(x)) return x > 0 ? "INFINITY" : "-INFINITY";
  return hexDigits(x) + "f";
}

std::string reproducerSnippet(const nlohmann::json& file, std::string_view language) {
  if (language != "python" && language != "c") {
    throw std::invalid_argument(
        fmt::format("snippet language {}: python or c", std::string(language)));
  }
  checkVectorLayout(file);
  if (isDispatchVectorFile(file)) return dispatchSnippet(file, language);
  if (isLayerVectorFile(file)) return layerSnippet(file, language);
  const auto findings = snippetFindings(file, "RouterReproducer", readFinding);
  if (language == "python") {
    return pythonSnippets(findings,
                          [](fmt::memory_buffer& out, const Finding& f) { pythonSnippet(out, f); });
  }
  fmt::memory_buffer out;
  const bool family = std::any_of(findings.begin(), findings.end(),
                                  [](const Finding& f) { return f.c.family.has_value(); });
  fmt::format_to(std::back_inserter(out),
                 "/* moe-oracle: {} finding(s) as C99; main prints the router's recorded answer "
                 "beside the\n * spec's and returns 1 when they differ. */\n",
                 findings.size());
  fmt::format_to(std::back_inserter(out), "#include <math.h>\n");
  if (family) fmt::format_to(std::back_inserter(out), "#include <stddef.h>\n");
  fmt::format_to(std::back_inserter(out), "#include <stdint.h>\n#include <stdio.h>\n");
  if (family) {
    fmt::format_to(std::back_inserter(out),
                   "\n#include \"moe/route_abi.h\" /* moe_route_params_v2 (impl/include) */\n");
  }
  // Several findings share one translation unit: their names get the finding's number.
  cFindingsAndMain(out, findings, cSnippet);
  return fmt::to_string(out);
}

}  // namespace moe::fuzz
