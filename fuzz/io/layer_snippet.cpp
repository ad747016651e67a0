#include "moe/fuzz/layer_snippet.hpp"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <vector>

#include "moe/fuzz/contract.hpp"
#include "moe/fuzz/float_bits.hpp"
#include "moe/fuzz/layer_case.hpp"
#include "moe/fuzz/layer_verdict.hpp"
#include "snippet_parts.hpp"

namespace moe::fuzz {

namespace {

struct LayerFinding {
  int64_t tcId = 0;
  std::string impl, kind, certificate;
  Contract contract;
  bool routed = false;
  LayerCase c;
  int32_t token = -1;
  int status = 0;
  std::optional<std::string> fault;  // the call's fault as recorded (crash, hang, stray write)
  std::vector<float> y;              // as recorded (empty after a fault)
  std::vector<int32_t> ids;          // the routing returned, as recorded (routed only)
  std::vector<float> gates;
};

LayerFinding readFinding(const nlohmann::json& t) {
  LayerFinding f;
  f.tcId = t.value("tcId", int64_t{0});
  f.impl = t.value("impl", std::string("the layer"));
  f.kind = t.at("kind").get<std::string>();
  f.certificate = t.value("certificate", std::string());
  f.contract = parseContractJSON(t.at("contract"));
  f.routed = t.value("routed", false);
  f.c = layerCaseFromJSON(t.at("case"));
  f.token = t.value("token", -1);
  const auto& out = t.at("output");
  f.status = out.at("status").get<int>();
  if (out.contains("fault")) {
    f.fault = out["fault"].value("detail", std::string("the call failed"));
  } else {
    for (const auto& v : out.at("y")) f.y.push_back(parseHex32(v.get<std::string>()));
    if (out.value("routed", false) && out.contains("ids") && out.contains("gates")) {
      f.ids = out["ids"].get<std::vector<int32_t>>();
      for (const auto& v : out["gates"]) f.gates.push_back(parseHex32(v.get<std::string>()));
    }
  }
  if (!f.fault && layerDueStatuses(f.c).empty() &&
      (f.token < 0 || f.token >= f.c.tokens ||
       f.y.size() != static_cast<size_t>(f.c.tokens) * f.c.hidden)) {
    throw std::invalid_argument("no token of the case is named, or y has the wrong size");
  }
  return f;
}

// Values as the call passes them: binary32 bits, or a bf16's 16 bits.
std::string bitsList(const std::vector<float>& v, bool bf16) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    const uint32_t b = std::bit_cast<uint32_t>(v[i]);
    out += (i == 0       ? ""
            : i % 8 == 0 ? ",\n    "
                         : ", ") +
           (bf16 ? fmt::format("0x{:04x}u", b >> 16) : fmt::format("0x{:08x}u", b));
  }
  return v.empty() ? std::string("0") : out;
}

// A binary64 exactly (%a), or C's / Python's spelling of an infinity.
std::string cDouble(double x) {
  if (std::isnan(x)) return "NAN";
  if (std::isinf(x)) return x > 0 ? "INFINITY" : "-INFINITY";
  return fmt::format("{:a}", x);
}
std::string pyDouble(double x) {
  if (std::isnan(x)) return "float('nan')";
  if (std::isinf(x)) return x > 0 ? "float('inf')" : "float('-inf')";
  return fmt::format("float.fromhex('{:a}')", x);
}

template <class F>
std::string joined(const std::vector<double>& v, F&& spell) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    out += (i == 0 ? "" : i % 4 == 0 ? ",\n    " : ", ") + spell(v[i]);
  }
  return out;
}

std::string intList(const std::vector<int32_t>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out;
}

std::vector<LayerTokenReference> referencesOf(const LayerFinding& f) {
  Judge judge;
  std::vector<LayerTokenReference> refs = layerTokenReferences(f.c, f.token, f.contract, judge);
  if (refs.empty()) {
    throw std::invalid_argument(fmt::format(
        "tcId {}: token {}'s y is not judged against a routing there (a row without a ranking, "
        "a possible overflow, or too many near ties): no program can check it",
        f.tcId, f.token));
  }
  return refs;
}

// ---- C -------------------------------------------------------------------------------------

void cCall(fmt::memory_buffer& out, const LayerFinding& f) {
  const LayerCase& c = f.c;
  const LayerCallParams p = layerCallParams(c);
  const bool bf16 = c.dtype == LayerDtype::kBf16;
  const char* in = bf16 ? "uint16_t" : "uint32_t";
  const size_t outputs = static_cast<size_t>(c.tokens) * c.hidden;
  const size_t slots = static_cast<size_t>(c.tokens) * c.k;
  auto to = std::back_inserter(out);
  fmt::format_to(to, "  static const {} x[] = {{{}}};\n", in, bitsList(c.x, bf16));
  fmt::format_to(to,
                 "  static const union {{ uint32_t u[{}]; float f[{}]; }} logits = {{{{{}}}}};\n",
                 std::max<size_t>(c.logits.size(), 1), std::max<size_t>(c.logits.size(), 1),
                 bitsList(c.logits, false));
  fmt::format_to(to, "  static const {} w13[] = {{{}}};\n", in, bitsList(c.w13, bf16));
  fmt::format_to(to, "  static const {} w2[] = {{{}}};\n", in, bitsList(c.w2, bf16));
  fmt::format_to(to, "  static float y[{}], gates[{}];\n  static int32_t ids[{}];\n",
                 std::max<size_t>(outputs, 1), std::max<size_t>(slots, 1),
                 std::max<size_t>(slots, 1));
  fmt::format_to(to, "  moe_layer_params_v1 p;\n");
  if (c.family) {
    const Family& fam = *c.family;
    if (!fam.bias.empty()) {
      fmt::format_to(to,
                     "  static const union {{ uint32_t u[{}]; float f[{}]; }} bias = {{{{{}}}}};\n",
                     fam.bias.size(), fam.bias.size(), bitsList(fam.bias, false));
    }
    fmt::format_to(to,
                   "  moe_route_params_v2 route;\n  memset(&route, 0, sizeof route);\n"
                   "  route.struct_size = (uint32_t)sizeof route - {};\n"
                   "  route.tokens = {};\n  route.experts = {};\n  route.k = {};\n"
                   "  route.score = {};\n  route.bias = {};\n  route.groups = {};\n"
                   "  route.topk_groups = {};\n  route.group_score = {};\n"
                   "  route.renormalize = {};\n  route.scale = bits(0x{:08x}u);\n",
                   fam.structShort, c.tokens, c.experts, c.k, static_cast<int32_t>(fam.score),
                   fam.bias.empty() ? "NULL" : "bias.f", fam.groups, fam.topkGroups,
                   static_cast<int32_t>(fam.groupScore), fam.renormalize,
                   std::bit_cast<uint32_t>(fam.scale));
  }
  fmt::format_to(to,
                 "  memset(&p, 0, sizeof p);\n  p.struct_size = (uint32_t)sizeof p - {};\n"
                 "  p.tokens = {};\n  p.hidden = {};\n  p.intermediate = {};\n  p.experts = {};\n"
                 "  p.k = {};\n  p.activation = {};\n  p.dtype = {};\n  p.route = {};\n",
                 p.structShort, p.tokens, p.hidden, p.intermediate, p.experts, p.k, p.activation,
                 p.dtype, c.family ? "&route" : "NULL");
  fmt::format_to(to,
                 "  /* The outputs filled with a signalling NaN (ids -2): what the layer leaves "
                 "alone shows. */\n"
                 "  for (i = 0; i < {}; ++i) y[i] = bits(0x7fa00000u);\n"
                 "  for (i = 0; i < {}; ++i) ids[i] = -2, gates[i] = bits(0x7fa00000u);\n",
                 outputs, slots);
  fmt::format_to(to, "  status = moe_layer_v1(&p, {}, {}, {}, {}, {}, {}, {});\n",
                 p.nullX ? "NULL" : "x", p.nullLogits ? "NULL" : "logits.f",
                 p.nullW13 ? "NULL" : "w13", p.nullW2 ? "NULL" : "w2", p.nullY ? "NULL" : "y",
                 f.routed ? "ids" : "NULL", f.routed ? "gates" : "NULL");
}

// A finding with the routing returned is judged against that routing's exact gates, which
// is tighter than any routing the verdict accepts: when the layer returns the recorded
// routing again, y is held to it (the spec's sparse forward over those experts and gates).
void cReturnedRouting(fmt::memory_buffer& out, const LayerFinding& f) {
  const LayerCase& c = f.c;
  const auto from = static_cast<size_t>(f.token) * c.k;
  const auto k = static_cast<size_t>(c.k);
  if (!f.routed || f.ids.size() < from + k || f.gates.size() < from + k) return;
  const std::vector<int32_t> ids(f.ids.begin() + from, f.ids.begin() + from + k);
  const std::vector<float> gates(f.gates.begin() + from, f.gates.begin() + from + k);
  bool overflow = false;
  const LayerTokenReference r = layerRoutingReference(c, f.token, ids, gates, f.contract, overflow);
  if (overflow) return;
  std::string gateBits;
  for (size_t i = 0; i < gates.size(); ++i) {
    gateBits += fmt::format("{}0x{:08x}u", i ? ", " : "", std::bit_cast<uint32_t>(gates[i]));
  }
  auto to = std::back_inserter(out);
  fmt::format_to(
      to,
      "  /* The routing the layer returned when the finding was made: y is held to "
      "its exact gates\n     when the layer returns it again. */\n"
      "  {{\n    static const int32_t rec_ids[] = {{{}}};\n"
      "    static const uint32_t rec_gates[] = {{{}}};\n"
      "    static const double rec_ref[] = {{{}}};\n"
      "    static const double rec_budget[] = {{{}}};\n"
      "    int s, same = 1;\n"
      "    for (s = 0; s < {}; ++s) same = same && ids[(size_t)t * {} + s] == rec_ids[s] "
      "&& same_bits(gates[(size_t)t * {} + s], rec_gates[s]);\n"
      "    if (same && !within(y + (size_t)t * hidden, rec_ref, rec_budget, hidden, "
      "NULL)) {{\n"
      "      printf(\"token %d: the recorded routing again, and y outside its budget: "
      "the finding reproduces\\n\", t);\n      return 1;\n    }}\n"
      "    if (!same) printf(\"token %d: a routing other than the recorded one\\n\", "
      "t);\n  }}\n",
      intList(ids), gateBits, joined(r.ref, cDouble), joined(r.budget, cDouble), c.k, c.k, c.k);
}

void cSnippet(fmt::memory_buffer& out, const LayerFinding& f, const std::string& suffix) {
  const LayerCase& c = f.c;
  auto to = std::back_inserter(out);
  fmt::format_to(to, "/* {}: {}\n{} */\nstatic int finding{}(void) {{\n  int i, status;\n", f.impl,
                 f.kind, commented(f.certificate, " * "), suffix);
  cCall(out, f);
  const std::vector<DueStatus> due = layerDueStatuses(c);
  if (!due.empty()) {
    const size_t outputs = static_cast<size_t>(c.tokens) * c.hidden;
    const size_t slots = static_cast<size_t>(c.tokens) * c.k;
    fmt::format_to(to,
                   "  /* Outside the domain: {} */\n  {{\n    int written = 0;\n"
                   "    for (i = 0; i < {}; ++i) written |= !same_bits(y[i], 0x7fa00000u);\n"
                   "    for (i = 0; i < {}; ++i) written |= ids[i] != -2 || "
                   "!same_bits(gates[i], 0x7fa00000u);\n"
                   "    printf(\"moe_layer_v1 returned %d%s; layer_abi.h asks for {} with nothing "
                   "written\\n\", status, written ? \" and wrote its outputs\" : \"\");\n"
                   "    return status == 0 || ({}) || written;\n  }}\n}}\n",
                   dueReasons(due), outputs, slots, dueNames(due), noneOfDue(due));
    return;
  }
  if (f.fault) {
    fmt::format_to(to,
                   "  /* When the finding was made, the call failed: {}\n"
                   "   * A crash or a hang shows here as this program crashing or hanging. */\n"
                   "  printf(\"moe_layer_v1 returned %d\\n\", status);\n  return 0;\n}}\n",
                   *f.fault);
    return;
  }
  const std::vector<LayerTokenReference> refs = referencesOf(f);
  for (size_t r = 0; r < refs.size(); ++r) {
    fmt::format_to(to, "  /* An acceptable routing: experts {} with gates {} */\n",
                   intList(refs[r].experts),
                   joined(refs[r].gates, [](double g) { return fmt::format("{:.9g}", g); }));
    fmt::format_to(to, "  static const double ref{}[] = {{{}}};\n", r,
                   joined(refs[r].ref, cDouble));
    fmt::format_to(to, "  static const double budget{}[] = {{{}}};\n", r,
                   joined(refs[r].budget, cDouble));
  }
  fmt::format_to(to,
                 "  const int t = {}, hidden = {};\n  int fits = 0, worst = -1;\n"
                 "  if (status != 0 && status != MOE_ROUTE_EUNSUPPORTED && status != "
                 "MOE_ROUTE_EINTERNAL) {{\n"
                 "    printf(\"moe_layer_v1 returned %d on a call inside the domain\\n\", "
                 "status);\n    return 1;\n  }}\n"
                 "  if (status != 0) {{\n    printf(\"moe_layer_v1 returned %d: it abstains\\n\", "
                 "status);\n    return 0;\n  }}\n",
                 f.token, c.hidden);
  for (size_t r = 0; r < refs.size(); ++r) {
    fmt::format_to(to,
                   "  fits |= within(y + (size_t)t * hidden, ref{0}, budget{0}, hidden, {1});\n", r,
                   r == 0 ? "&worst" : "NULL");
  }
  cReturnedRouting(out, f);
  fmt::format_to(to,
                 "  if (worst >= 0) printf(\"token %d: y[%d] = %.9g; the spec's sparse forward "
                 "over the first routing %.17g, budget %.6g\\n\", t, worst, "
                 "y[(size_t)t * hidden + worst], ref0[worst], budget0[worst]);\n"
                 "  printf(\"token %d: y %s\\n\", t, fits ? \"fits an acceptable routing\" : "
                 "\"fits none of the {} acceptable routing(s): the finding reproduces\");\n"
                 "  return !fits;\n}}\n",
                 refs.size());
}

std::string cProgram(const std::vector<LayerFinding>& findings) {
  fmt::memory_buffer out;
  auto to = std::back_inserter(out);
  fmt::format_to(to,
                 "/* moe-oracle: {} fused-layer finding(s) as C99. Build it with the layer's "
                 "library and\n * moe-oracle's impl/include: cc -std=c99 -I impl/include repro.c "
                 "-L. -lyours -lm\n * main calls moe_layer_v1 on each case and returns 1 when a "
                 "finding reproduces: y of\n * the offending token within the budget of none of "
                 "the routings the verdict accepts\n * (their spec sparse forward and budget are "
                 "below), a status other than those due, or\n * outputs written on an error. The "
                 "routing the layer returns is not judged here:\n * `moe-oracle replay --impl` "
                 "does that. */\n"
                 "#include <math.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n"
                 "#include <string.h>\n\n#include \"moe/layer_abi.h\"\n\n",
                 findings.size());
  // Only the helpers the findings use (C99 compilers warn of unused static functions).
  bool needsSameBits = false, valueFinding = false;
  for (const LayerFinding& f : findings) {
    const bool status = !layerDueStatuses(f.c).empty();
    needsSameBits |= status || (!f.fault && f.routed);
    valueFinding |= !status && !f.fault;
  }
  fmt::format_to(to, "{}",
                 "static float bits(uint32_t b) {\n  float f;\n  memcpy(&f, &b, sizeof f);\n"
                 "  return f;\n}\n");
  if (needsSameBits) {
    fmt::format_to(to, "{}",
                   "\nstatic int same_bits(float v, uint32_t b) {\n  uint32_t u;\n"
                   "  memcpy(&u, &v, sizeof u);\n  return u == b;\n}\n");
  }
  if (valueFinding) {
    fmt::format_to(to, "{}",
                   "\n/* y within the budget of one routing everywhere; *worst: the coordinate "
                   "most past it. */\n"
                   "static int within(const float *y, const double *ref, const double *budget, "
                   "int n,\n                  int *worst) {\n"
                   "  int c, ok = 1;\n  double most = -INFINITY;\n"
                   "  for (c = 0; c < n; ++c) {\n"
                   "    const double d = isfinite(y[c]) ? fabs((double)y[c] - ref[c]) : "
                   "INFINITY;\n"
                   "    if (d > budget[c]) ok = 0;\n"
                   "    if (worst && d - budget[c] > most) most = d - budget[c], *worst = c;\n"
                   "  }\n  return ok;\n}\n");
  }
  cFindingsAndMain(out, findings, cSnippet);
  return fmt::to_string(out);
}

// ---- Python --------------------------------------------------------------------------------

std::string pyFloats(const std::vector<float>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    out += (i == 0       ? ""
            : i % 8 == 0 ? ",\n    "
                         : ", ") +
           fmt::format("0x{:08x}", std::bit_cast<uint32_t>(v[i]));
  }
  return out;
}

void pythonSnippet(fmt::memory_buffer& out, const LayerFinding& f) {
  const LayerCase& c = f.c;
  if (!layerDueStatuses(c).empty()) {
    throw std::invalid_argument(fmt::format(
        "tcId {}: the call lies outside moe_layer_v1's domain (a status finding), which a "
        "Python function is never given: --as c calls moe_layer_v1 on it",
        f.tcId));
  }
  auto to = std::back_inserter(out);
  fmt::format_to(to,
                 "# moe-oracle: a fused-layer finding (moe_layer_v1) of {}: {}\n{}\n#\n"
                 "# Runs with NumPy alone. It checks the y recorded when the finding was made; "
                 "set `layer`\n# to your function, layer(x, logits, w13, w2, k, family) -> y or "
                 "(y, ids, gates), as\n# moe_oracle.fuzz_layer calls it, to check it on the case "
                 "instead (NumPy float32\n# arrays: torch.from_numpy makes them tensors{}).\n"
                 "import numpy as np\n\nlayer = None\n\n",
                 f.impl, f.kind, commented(f.certificate, "# "),
                 c.dtype == LayerDtype::kBf16 ? "; every value is a bf16 one, .to(torch.bfloat16) "
                                                "is exact"
                                              : "");
  fmt::format_to(to,
                 "def f32(bits, *shape):\n"
                 "    return np.array(bits, dtype=np.uint32).view(np.float32).reshape(shape)\n\n\n"
                 "T, H, I, E, k = {}, {}, {}, {}, {}\n"
                 "x = f32([{}], T, H)\nlogits = f32([{}], T, E)\n"
                 "w13 = f32([{}], E, 2 * I, H)  # expert e's W1 rows, then its W3 rows\n"
                 "w2 = f32([{}], E, H, I)\n",
                 c.tokens, c.hidden, c.intermediate, c.experts, c.k, pyFloats(c.x),
                 pyFloats(c.logits), pyFloats(c.w13), pyFloats(c.w2));
  if (c.family) {
    const Family& fam = *c.family;
    fmt::format_to(
        to,
        "family = {{\"score\": \"{}\", \"bias\": {}, \"groups\": {}, \"topk_groups\": "
        "{},\n          \"group_score\": \"{}\", \"renormalize\": {}, \"scale\": {}}}\n",
        fam.score == ScoreFunction::kSigmoid ? "sigmoid" : "softmax",
        fam.bias.empty() ? "None" : fmt::format("f32([{}], E)", pyFloats(fam.bias)), fam.groups,
        fam.topkGroups, fam.groupScore == GroupScoreFunction::kTop2Sum ? "top2_sum" : "max",
        fam.renormalize == 1 ? "True" : "False", pyDouble(static_cast<double>(fam.scale)));
  } else {
    fmt::format_to(to, "family = None  # softmax top-k renormalised\n");
  }
  if (f.fault) {
    fmt::format_to(to,
                   "\n# When the finding was made, the call failed:\n{}\n"
                   "if layer is not None:\n    layer(x, logits, w13, w2, k, family)\n",
                   commented(*f.fault, "#   "));
    return;
  }
  const std::vector<LayerTokenReference> refs = referencesOf(f);
  fmt::format_to(to,
                 "\nt = {}  # the offending token\n"
                 "# The routings the verdict accepts for it: (experts, the spec's sparse "
                 "forward, the budget).\nacceptable = [\n",
                 f.token);
  for (const LayerTokenReference& r : refs) {
    fmt::format_to(to, "    ([{}],\n     [{}],\n     [{}]),\n", intList(r.experts),
                   joined(r.ref, pyDouble), joined(r.budget, pyDouble));
  }
  fmt::format_to(to, "]\nrecorded_y = f32([{}], T, H)\n", pyFloats(f.y));
  // With the routing returned, y is judged against its exact gates: the recorded routing's
  // reference, held to whenever the routing checked is the recorded one.
  const auto from = static_cast<size_t>(f.token) * c.k;
  const auto k = static_cast<size_t>(c.k);
  bool overflow = true;
  LayerTokenReference rec;
  std::vector<float> recGates;
  if (f.routed && f.ids.size() >= from + k && f.gates.size() >= from + k) {
    const std::vector<int32_t> ids(f.ids.begin() + from, f.ids.begin() + from + k);
    recGates.assign(f.gates.begin() + from, f.gates.begin() + from + k);
    rec = layerRoutingReference(c, f.token, ids, recGates, f.contract, overflow);
    if (!overflow) {
      fmt::format_to(to,
                     "# The routing the layer returned for token t when the finding was made "
                     "(ids, gates),\n# and the spec's sparse forward over it with its budget: "
                     "y is held to it when the\n# routing is that one again.\n"
                     "recorded_routing = ([{}], [{}])\nrecorded_ref = [{}]\n"
                     "recorded_budget = [{}]\n",
                     intList(ids), pyFloats(recGates), joined(rec.ref, pyDouble),
                     joined(rec.budget, pyDouble));
    }
  }
  if (overflow) fmt::format_to(to, "recorded_routing = None\n");
  fmt::format_to(
      to, "{}",
      "\nrouting = None  # (ids, gate bits) of token t, when the layer returns them\n"
      "if layer is not None:\n"
      "    out = layer(x, logits, w13, w2, k, family)\n"
      "    y = out[0] if isinstance(out, tuple) else out\n"
      "    y = y.float().cpu() if hasattr(y, \"cpu\") else y\n"
      "    y = np.asarray(y, dtype=np.float32).reshape(T, H)\n"
      "    if isinstance(out, tuple) and len(out) == 3:\n"
      "        ids, gates = (np.asarray(v.cpu() if hasattr(v, \"cpu\") else v) for v in out[1:])\n"
      "        routing = ([int(i) for i in ids.reshape(-1)[t * k:(t + 1) * k]],\n"
      "                   [int(g) for g in gates.astype(np.float32).reshape(-1)[t * k:(t + 1) * "
      "k].view(np.uint32)])\n"
      "else:\n"
      "    y = recorded_y\n"
      "    routing = recorded_routing\n"
      "yt = y[t].astype(np.float64)\n\n\n"
      "def fits(ref, budget):\n"
      "    return bool(np.all(np.isfinite(yt)) and\n"
      "                np.all(np.abs(yt - np.array(ref)) <= np.array(budget)))\n\n\n"
      "ref, budget = np.array(acceptable[0][1]), np.array(acceptable[0][2])\n"
      "c = int(np.argmax(np.abs(yt - ref) - budget))\n"
      "print(f\"token {t}: y[{c}] = {yt[c]!r}; the spec's sparse forward over the first "
      "routing {ref[c]!r}, budget {budget[c]:.6g}\")\n"
      "if recorded_routing is not None and routing == recorded_routing:\n"
      "    assert fits(recorded_ref, recorded_budget), \\\n"
      "        \"y outside the budget of the recorded routing: the finding reproduces\"\n"
      "assert any(fits(r, b) for _, r, b in acceptable), \\\n"
      "    \"y fits none of the routings the verdict accepts: the finding reproduces\"\n");
}

}  // namespace

std::string layerSnippet(const nlohmann::json& file, std::string_view language) {
  const auto findings = snippetFindings(file, "LayerReproducer", readFinding);
  if (language == "c") return cProgram(findings);
  return pythonSnippets(
      findings, [](fmt::memory_buffer& out, const LayerFinding& f) { pythonSnippet(out, f); });
}

}  // namespace moe::fuzz
