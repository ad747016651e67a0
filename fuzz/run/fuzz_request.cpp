#include "moe/fuzz/fuzz_request.hpp"

#include <fmt/format.h>

#include <cmath>
#include <random>
#include <stdexcept>

#include "moe/fuzz/contract.hpp"
#include "moe/fuzz/dispatch_contract.hpp"

namespace moe::fuzz {

namespace {

using R = FuzzRequest;
constexpr unsigned kCommand = kCommandFuzz;
constexpr unsigned kKnob = kCommandFuzz | kCommandReplay;
constexpr unsigned kEveryPython = kPythonRouter | kPythonDispatch | kPythonLayer;
constexpr unsigned kRun = kCommand | kEveryPython | kPythonMain;

// clang-format off
constexpr FuzzOption kOptions[] = {
    {"--impl", "", &R::impl, kCommand, FuzzCheck::kNone, "",
     "built-in router name (moe-oracle list... e.g. scalar-probs), spec32, or a shared library "
     "exporting moe_route_v1 (a value with '/' or ending in .so is a path, relative to the "
     "current directory)", true},
    {"--seconds", "seconds", &R::seconds, kRun, FuzzCheck::kPositive, "60",
     "time limit (default 10)"},
    {"--seed", "seed", &R::seed, kRun, FuzzCheck::kSeed, "None",
     "seed of the case stream, 0 to 2^64-1 (default: random, printed)", false, true},
    {"--out", "out", &R::outDir, kRun, FuzzCheck::kNone, "None",
     "where reproducers go (default ./moe-oracle-out)"},
    {"--json", "", &R::json, kCommand | kPythonMain, FuzzCheck::kNone, "",
     "print one JSON summary object on stdout"},
    {"--keep-going", "keep_going", &R::keepGoing, kRun, FuzzCheck::kNone, "False",
     "do not stop at the first violation: count every kind, report each once with its "
     "smallest reproducer"},
    {"--experts", "experts", &R::experts, kRun, FuzzCheck::kNone, "None",
     "experts to draw: values and ranges, e.g. 256 or 1-64,128 (default 0-4096, or the "
     "contract's shapes)", false, true},
    {"--k", "k", &R::k, kRun, FuzzCheck::kNone, "None",
     "k to draw: values and ranges (default 0 to E+2 per case)", false, true},
    {"--tokens", "tokens", &R::tokens, kRun, FuzzCheck::kNone, "None",
     "batch sizes to draw: values and ranges, e.g. 1-65536 (default 0-65536, mostly small)",
     false, true},
    {"--block", "block", &R::block, kCommand | kPythonDispatch, FuzzCheck::kNone, "None",
     "moe_dispatch_v1: blocks to draw, values and ranges (default 1-256, or the contract's "
     "shapes)", false, true},
    {"--capacity", "capacity", &R::capacity, kCommand | kPythonDispatch, FuzzCheck::kNone,
     "None",
     "moe_dispatch_v1: capacities to draw, values and ranges, -1 for no limit (default: -1 and "
     "values around the experts' loads)", false, true},
    {"--hidden", "hidden", &R::hidden, kCommand | kPythonLayer, FuzzCheck::kNone, "None",
     "moe_layer_v1: hidden sizes H to draw, values and ranges (default: real models' H, a "
     "multiple of 64 and one off it, and small H; or the contract's shapes)", false, true},
    {"--intermediate", "intermediate", &R::intermediate, kCommand | kPythonLayer,
     FuzzCheck::kNone, "None",
     "moe_layer_v1: expert intermediate sizes I to draw, values and ranges (default: real "
     "models' I and small I; or the contract's shapes)", false, true},
    {"--family", "family", &R::family, kCommand | kPythonRouter | kPythonLayer | kPythonMain,
     FuzzCheck::kNone, "None",
     "moe_route_v2: the model recipes the kernel implements, e.g. deepseek-v3 or "
     "llama4,mixtral (each fixes every family field and the shapes E, k; replaces the "
     "contract's families)", false, true},
    {"--shrink-seconds", "shrink_seconds", &R::shrinkSeconds, kRun, FuzzCheck::kNonNegative,
     "10", "time cap on shrinking each violation (default 10; 0: no shrinking)"},
    {"--min-tokens", "min_tokens", &R::minTokens, kRun, FuzzCheck::kNone, "1000",
     "fewer tokens judged than this is insufficient coverage, exit 3 (default 1000)"},
    {"--cases", "max_cases", &R::maxCases, kRun, FuzzCheck::kNone, "0",
     "cases to run at the most, whichever of it and --seconds comes first (0: only the time "
     "limit); with --seed, the same cases on any machine however fast"},
    {"", "progress", &R::progress, kEveryPython, FuzzCheck::kNone, "False",
     "progress on stderr while the run goes on"},
    {"--jobs", "jobs", &R::jobs, kCommand | kPythonRouter, FuzzCheck::kJobs, "None",
     "threads that judge the tokens of a case (default: the cores this process may use); the "
     "results are the same for any number", false, true},
    {"--gate-factor", "gate_factor", &R::gateFactor, kKnob | kPythonRouter | kPythonMain,
     FuzzCheck::kPositive, "None",
     "gate budget: multiple of the binary32 spec's own gate error (overrides the contract's "
     "spec32_factor)", false, true},
    {"--gate-ulp", "gate_ulp", &R::gateUlp, kKnob | kPythonRouter | kPythonMain,
     FuzzCheck::kNonNegative, "None",
     "gate budget: extra ulps of the exact gate (overrides the contract's ulp)", false, true},
    {"--no-analytic-floor", "analytic_floor", &R::noAnalyticFloor,
     kKnob | kPythonRouter | kPythonMain, FuzzCheck::kNone, "True",
     "drop the derived first-order gate bound from the budget (docs/fuzz.md)", false, false,
     true},
    {"--tie-order", "tie_order", &R::tieOrder, kKnob | kPythonRouter | kPythonMain,
     FuzzCheck::kTieOrder, "None",
     "who wins an exact tie: lowest-index (the spec) or any (overrides the contract's "
     "tie_order)", false, true},
    {"--in-process", "", &R::inProcess, kKnob, FuzzCheck::kNone, "",
     "run a shared library in this process (faster; a crash or hang of the library then ends "
     "the run) instead of in an isolated child process"},
    {"--call-timeout", "", &R::callTimeout, kKnob, FuzzCheck::kPositive, "",
     "seconds before a call of an isolated library counts as a hang (default: 10 s plus 2 ns "
     "per token, expert and kept slot)"},
    {"--abi", "", &R::abi, kKnob, FuzzCheck::kAbi, "",
     "the entry point to fuzz: moe_route_v1 or moe_route_v2 (default: a library's "
     "moe_route_v2 when it exports one, else moe_route_v1; built-in routers and spec32: "
     "moe_route_v1), or moe_dispatch_v1 (default for a library that exports it and no "
     "router), or moe_layer_v1 (default for a library that exports it and no other door)"},
};
// clang-format on

std::string spelled(FuzzDoor door, std::string_view flag, std::string_view keyword) {
  return std::string(door == FuzzDoor::kCommand ? flag : keyword);
}

// The options every door's run shares.
void fillRun(RunOptions& o, const FuzzRequest& r) {
  o = r;
  if (!r.seedGiven) o.seed = std::random_device{}();
}

}  // namespace

std::span<const FuzzOption> fuzzOptions() {
  return kOptions;
}

std::string numberProblem(FuzzCheck check, double v) {
  switch (check) {
    case FuzzCheck::kPositive:
      return std::isfinite(v) && v > 0 ? "" : "must be > 0 and finite";
    case FuzzCheck::kNonNegative:
      return std::isfinite(v) && v >= 0 ? "" : "must be >= 0 and finite";
    case FuzzCheck::kJobs:
      return v >= 1 && v <= kMaxJobs && v == std::floor(v)
                 ? ""
                 : fmt::format("must be a whole number from 1 to {}", kMaxJobs);
    default:
      return "";
  }
}

std::string textProblem(FuzzCheck check, const std::string& value) {
  if (check == FuzzCheck::kTieOrder && value != "lowest-index" && value != "any") {
    return "must be lowest-index or any";
  }
  if (check == FuzzCheck::kAbi && value != kAbiV1 && value != kAbiV2 && value != kAbiDispatchV1 &&
      value != kAbiLayerV1) {
    return fmt::format("must be {}, {}, {} or {}", kAbiV1, kAbiV2, kAbiDispatchV1, kAbiLayerV1);
  }
  return "";
}

VerdictConfig FuzzRequest::verdictConfig() const {
  VerdictConfig c;
  if (gateFactor >= 0) c.gateFactor = gateFactor;
  if (gateUlp >= 0) c.gateUlp = gateUlp;
  c.analyticFloor = !noAnalyticFloor;
  c.analyticFloorGiven = noAnalyticFloor;
  if (!tieOrder.empty()) c.tieOrder = parseTieOrder(tieOrder, "--tie-order");
  return c;
}

CampaignOptions campaignOptions(const FuzzRequest& r, const Contract& contract,
                                const std::string& name, FuzzDoor door) {
  CampaignOptions o;
  const std::string prefix = door == FuzzDoor::kCommand ? "--" : "";
  o.shapes = shapeSpaceFor(contract.shapes, r.experts, r.k, r.tokens, prefix);
  if (!r.family.empty()) {
    if (!contract.v2()) {
      throw std::invalid_argument(
          door == FuzzDoor::kCommand
              ? fmt::format("--family {}: {} is fuzzed through moe_route_v1, which has no routing "
                            "family (a library exporting moe_route_v2, or --abi moe_route_v2)",
                            r.family, name)
              : std::string("family: the recipes are moe_route_v2's; the contract needs \"abi\": "
                            "\"moe_route_v2\""));
    }
    o.families = familiesOfRecipes(r.family, spelled(door, "--family", "family"));
  }
  if (contract.v2()) checkFamiliesDrawable(o.families.value_or(contract.families), o.shapes);
  fillRun(o, r);
  o.config = r.verdictConfig();
  o.config.jobs = r.jobs > 0 ? r.jobs : availableCores();
  return o;
}

DispatchCampaignOptions dispatchCampaignOptions(const FuzzRequest& r,
                                                const DispatchShapes& contractShapes) {
  DispatchCampaignOptions o;
  o.draw.shapes = dispatchShapesFor(contractShapes, r.tokens, r.k, r.experts, r.block, r.capacity);
  fillRun(o, r);
  return o;
}

LayerCampaignOptions layerCampaignOptions(const FuzzRequest& r, const Contract& contract,
                                          FuzzDoor door) {
  LayerCampaignOptions o;
  o.draw = layerDrawFor(contract, r.tokens, r.k, r.experts, r.hidden, r.intermediate);
  if (!r.family.empty()) {
    o.draw.familySet = familiesOfRecipes(r.family, spelled(door, "--family", "family"));
    o.draw.families = true;
  }
  fillRun(o, r);
  return o;
}

}  // namespace moe::fuzz
