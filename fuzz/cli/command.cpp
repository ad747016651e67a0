// moe-oracle: fuzz / replay / explain / reproduce / list (docs/fuzz.md). Exit codes: 0 = no
// violation, 1 = a violation or a failed replay, 2 = bad usage, unreadable input or a router
// that cannot be loaded, 3 = insufficient coverage (too few tokens judged, or most cases
// abstained), 130 / 143 = interrupted by SIGINT / SIGTERM (summary still printed).
#include "moe/fuzz/command.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <random>

#include "dispatch_command.hpp"
#include "layer_command.hpp"
#include "moe/fuzz/campaign.hpp"
#include "moe/fuzz/guarded_main.hpp"
#include "moe/fuzz/report.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/fuzz/snippet.hpp"
#include "moe/fuzz/vectors.hpp"
#include "reproduce.hpp"

#ifndef MOE_ORACLE_VERSION
#define MOE_ORACLE_VERSION "unknown"
#endif

namespace {

using namespace moe::fuzz;

volatile std::sig_atomic_t gStopSignal = 0;

extern "C" void onStopSignal(int sig) {
  gStopSignal = sig;
}

// A number that must be finite and > 0 (or >= 0): CLI11's own range check prints the
// limits of double with 309 digits and lets nan through.
CLI::Validator positiveFinite(bool allowZero) {
  return CLI::Validator(
      [allowZero](std::string& text) -> std::string {
        double v = 0;
        try {
          size_t used = 0;
          v = std::stod(text, &used);
          if (used != text.size()) return "not a number: " + text;
        } catch (const std::exception&) {
          return "not a number: " + text;
        }
        if (!std::isfinite(v) || v < 0 || (!allowZero && v == 0)) {
          return fmt::format("{} must be {} and finite", text, allowZero ? ">= 0" : "> 0");
        }
        return "";
      },
      allowZero ? "NUMBER >= 0" : "NUMBER > 0");
}

// Flags shared by fuzz, replay and explain: the verdict's knobs.
struct VerdictFlags {
  double gateFactor = -1, gateUlp = -1;
  bool noFloor = false;
  std::string tieOrder;

  void add(CLI::App* cmd) {
    cmd->add_option("--gate-factor", gateFactor,
                    "gate budget: multiple of the binary32 spec's own gate error (overrides the "
                    "contract's spec32_factor)")
        ->check(positiveFinite(false));
    cmd->add_option("--gate-ulp", gateUlp,
                    "gate budget: extra ulps of the exact gate (overrides the contract's ulp)")
        ->check(positiveFinite(true));
    cmd->add_flag("--no-analytic-floor", noFloor,
                  "drop the derived first-order gate bound from the budget (docs/fuzz.md)");
    cmd->add_option("--tie-order", tieOrder,
                    "who wins an exact tie: lowest-index (the spec) or any (overrides the "
                    "contract's tie_order)")
        ->check(CLI::IsMember({"lowest-index", "any"}));
  }
  VerdictConfig config() const {
    VerdictConfig c;
    if (gateFactor >= 0) c.gateFactor = gateFactor;
    if (gateUlp >= 0) c.gateUlp = gateUlp;
    c.analyticFloor = !noFloor;
    c.analyticFloorGiven = noFloor;
    if (!tieOrder.empty()) c.tieOrder = parseTieOrder(tieOrder, "--tie-order");
    return c;
  }
};

// Flags shared by the commands that run a router: how a shared library is run.
struct RunFlags {
  bool inProcess = false;
  double callTimeout = 0;
  std::string abi;

  void add(CLI::App* cmd) {
    cmd->add_flag("--in-process", inProcess,
                  "run a shared library in this process (faster; a crash or hang of the library "
                  "then ends the run) instead of in an isolated child process");
    cmd->add_option("--call-timeout", callTimeout,
                    "seconds before a call of an isolated library counts as a hang (default: 10 "
                    "s plus 2 ns per token, expert and kept slot)")
        ->check(positiveFinite(false));
    cmd->add_option("--abi", abi,
                    "the entry point to fuzz: moe_route_v1 or moe_route_v2 (default: a library's "
                    "moe_route_v2 when it exports one, else moe_route_v1; built-in routers and "
                    "spec32: moe_route_v1), or moe_dispatch_v1 (default for a library that "
                    "exports it and no router), or moe_layer_v1 (default for a library that "
                    "exports it and no other door)")
        ->check(CLI::IsMember({std::string(kAbiV1), std::string(kAbiV2),
                               std::string(kAbiDispatchV1), std::string(kAbiLayerV1)}));
  }
  RouterOptions options() const {
    RouterOptions o;
    o.abi = abi;
    o.inProcess = inProcess;
    o.callTimeout = callTimeout;
    o.stop = &gStopSignal;
    return o;
  }
  DoorOptions doorOptions() const {
    DoorOptions o;
    o.inProcess = inProcess;
    o.callTimeout = callTimeout;
    o.stop = &gStopSignal;
    return o;
  }
  bool dispatchDoor(const std::string& impl) const { return usesDispatchDoor(impl, abi); }
  bool layerDoor(const std::string& impl) const { return usesLayerDoor(impl, abi); }
};

bool prepareOut(const std::string& out);

struct FuzzFlags {
  std::string impl, out = "moe-oracle-out";
  double seconds = 10, shrinkSeconds = 10;
  uint64_t seed = 0, minTokens = 1000;
  bool json = false, keepGoing = false;
  std::string experts, k, tokens, family;
  std::string block, capacity;       // the dispatch door's
  std::string hidden, intermediate;  // the layer door's
  int jobs = 0;                      // 0: the cores the process may use
  CLI::Option* seedOption = nullptr;
};

// `moe-oracle fuzz` through the dispatch door (dispatch_command.cpp).
int runFuzzDispatch(const FuzzFlags& f, const RunFlags& running) {
  if (!f.family.empty()) {
    std::fprintf(stderr, "moe-oracle fuzz: --family is for routers (moe_route_v2), not %s\n",
                 std::string(kAbiDispatchV1).c_str());
    return 2;
  }
  if (!prepareOut(f.out)) return 2;
  DispatchFuzzArgs a;
  a.impl = f.impl;
  a.out = f.out;
  a.seconds = f.seconds;
  a.shrinkSeconds = f.shrinkSeconds;
  a.seed = f.seedOption->count() > 0 ? f.seed : std::random_device{}();
  a.minTokens = f.minTokens;
  a.json = f.json;
  a.keepGoing = f.keepGoing;
  a.tokens = f.tokens;
  a.k = f.k;
  a.experts = f.experts;
  a.block = f.block;
  a.capacity = f.capacity;
  a.door = running.doorOptions();
  std::signal(SIGINT, onStopSignal);
  std::signal(SIGTERM, onStopSignal);
  return runDispatchFuzz(a);
}

// `moe-oracle fuzz` through the layer door (layer_command.cpp).
int runFuzzLayer(const FuzzFlags& f, const RunFlags& running) {
  if (!f.block.empty() || !f.capacity.empty()) {
    std::fprintf(stderr,
                 "moe-oracle fuzz: --block and --capacity are for a dispatch kernel "
                 "(moe_dispatch_v1), not %s\n",
                 std::string(kAbiLayerV1).c_str());
    return 2;
  }
  if (!prepareOut(f.out)) return 2;
  LayerFuzzArgs a;
  a.impl = f.impl;
  a.out = f.out;
  a.seconds = f.seconds;
  a.shrinkSeconds = f.shrinkSeconds;
  a.seed = f.seedOption->count() > 0 ? f.seed : std::random_device{}();
  a.minTokens = f.minTokens;
  a.json = f.json;
  a.keepGoing = f.keepGoing;
  a.tokens = f.tokens;
  a.k = f.k;
  a.experts = f.experts;
  a.hidden = f.hidden;
  a.intermediate = f.intermediate;
  a.family = f.family;
  a.door = running.doorOptions();
  std::signal(SIGINT, onStopSignal);
  std::signal(SIGTERM, onStopSignal);
  return runLayerFuzz(a);
}

std::unique_ptr<Router> openOrSay(const std::string& impl, const char* cmd,
                                  const RouterOptions& options) {
  try {
    return openRouter(impl, options);
  } catch (const RouterLoadError& e) {
    std::fprintf(stderr, "moe-oracle %s: %s\n", cmd, e.what());
    return nullptr;
  }
}

// --out is made and tried before any case runs: a finding must never be lost to it.
bool prepareOut(const std::string& out) {
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec || !std::filesystem::is_directory(out) || access(out.c_str(), W_OK) != 0) {
    std::fprintf(stderr, "moe-oracle fuzz: --out %s cannot be created or written%s%s\n",
                 out.c_str(), ec ? ": " : "", ec ? ec.message().c_str() : "");
    return false;
  }
  return true;
}

int runFuzz(const FuzzFlags& f, const RouterOptions& routerOptions, const VerdictConfig& config) {
  if (!f.block.empty() || !f.capacity.empty()) {
    std::fprintf(stderr,
                 "moe-oracle fuzz: --block and --capacity are for a dispatch kernel "
                 "(moe_dispatch_v1); %s is fuzzed as a router\n",
                 f.impl.c_str());
    return 2;
  }
  if (!f.hidden.empty() || !f.intermediate.empty()) {
    std::fprintf(stderr,
                 "moe-oracle fuzz: --hidden and --intermediate are for a fused layer "
                 "(moe_layer_v1); %s is fuzzed as a router\n",
                 f.impl.c_str());
    return 2;
  }
  std::signal(SIGINT, onStopSignal);
  std::signal(SIGTERM, onStopSignal);
  std::unique_ptr<Router> router = openOrSay(f.impl, "fuzz", routerOptions);
  if (!router) return 2;
  CampaignOptions options;
  try {
    options.shapes = shapeSpaceFor(router->contract().shapes, f.experts, f.k, f.tokens, "--");
    if (!f.family.empty()) {
      if (!router->contract().v2()) {
        throw std::invalid_argument(fmt::format(
            "--family {}: {} is fuzzed through moe_route_v1, which has no routing family (a "
            "library exporting moe_route_v2, or --abi moe_route_v2)",
            f.family, router->name()));
      }
      options.families = familiesOfRecipes(f.family, "--family");
    }
    if (router->contract().v2()) {
      checkFamiliesDrawable(effectiveContract(*router, options).families, options.shapes);
    }
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "moe-oracle fuzz: %s\n", e.what());
    return 2;
  }
  if (!prepareOut(f.out)) return 2;
  options.seconds = f.seconds;
  options.seed = f.seedOption->count() > 0 ? f.seed : std::random_device{}();
  options.outDir = f.out;
  options.config = config;
  options.config.jobs = f.jobs > 0 ? f.jobs : availableCores();
  options.keepGoing = f.keepGoing;
  options.shrinkSeconds = f.shrinkSeconds;
  options.minTokens = f.minTokens;
  options.stop = &gStopSignal;
  std::fprintf(
      stderr, "moe-oracle fuzz %s: seed %llu, %g s, shapes %s%s; contract %s; judged with: %s\n",
      router->name().c_str(), static_cast<unsigned long long>(options.seed), f.seconds,
      options.shapes.text().c_str(), f.keepGoing ? ", keep going" : "",
      contractToJSON(router->contract()).c_str(),
      verdictConfigText(verdictConfigJSON(config, effectiveContract(*router, options))).c_str());
  CampaignSummary s = runCampaign(*router, options);
  for (const auto& v : s.violations) std::fputs(v.report.c_str(), stderr);
  std::fputs(summaryText(s).c_str(), stderr);
  if (f.json) {
    std::cout << summaryJSON(s).dump() << "\n";
  } else {
    for (const auto& v : s.violations) {
      if (!v.reproducer.empty()) std::cout << "reproducer: " << v.reproducer << "\n";
      std::cout << v.signature << "\n";
    }
  }
  if (gStopSignal != 0) return 128 + gStopSignal;
  return s.exitCode();
}

int runReplay(const std::vector<std::string>& files, const std::string& impl, bool json,
              const RunFlags& running, const VerdictConfig& config) {
  const RouterOptions routerOptions = running.options();
  std::unique_ptr<Router> router;
  std::unique_ptr<Dispatcher> dispatcher;
  std::unique_ptr<LayerKernel> layer;
  if (!impl.empty() && running.layerDoor(impl)) {
    if (!(layer = openLayerOrSay(impl, "replay", running.doorOptions()))) return 2;
  } else if (!impl.empty() && running.dispatchDoor(impl)) {
    if (!(dispatcher = openDispatcherOrSay(impl, "replay", running.doorOptions()))) return 2;
  } else if (!impl.empty() && !(router = openOrSay(impl, "replay", routerOptions))) {
    return 2;
  }
  // Exit 2 when any file or test cannot be read (bad input) or nothing could be run, else 1
  // when a test fails.
  int totalFailed = 0, totalPassed = 0, totalSkipped = 0, unreadable = 0;
  nlohmann::json report = nlohmann::json::array();
  for (const auto& path : files) {
    try {
      nlohmann::json file = loadVectorFile(path);
      ReplaySummary s = isLayerVectorFile(file)      ? replayLayerVectors(file, layer.get())
                        : isDispatchVectorFile(file) ? replayDispatchVectors(file, dispatcher.get())
                                                     : replayVectors(file, router.get(), config);
      for (const auto& line : s.lines) std::fprintf(stderr, "%s: %s\n", path.c_str(), line.c_str());
      std::fprintf(stderr, "%s: %d passed, %d failed, %d skipped\n", path.c_str(), s.passed,
                   s.failed, s.skipped);
      totalFailed += s.failed;
      unreadable += s.malformed;
      totalPassed += s.passed;
      totalSkipped += s.skipped;
      report.push_back({{"file", path},
                        {"passed", s.passed},
                        {"failed", s.failed},
                        {"skipped", s.skipped},
                        {"messages", s.lines},
                        {"failures", s.failures}});
    } catch (const std::exception& e) {
      std::fprintf(stderr, "moe-oracle replay: %s\n", e.what());
      ++totalFailed;
      ++unreadable;
      report.push_back({{"file", path}, {"error", e.what()}});
    }
  }
  if (json) {
    std::cout << nlohmann::json{{"passed", totalPassed},
                                {"failed", totalFailed},
                                {"skipped", totalSkipped},
                                {"unreadable", unreadable},
                                {"files", report}}
                     .dump()
              << "\n";
  }
  if (unreadable > 0) return 2;
  if (totalPassed + totalFailed == 0) {
    std::fprintf(stderr, "moe-oracle replay: no test read: nothing in the input could be run\n");
    return 2;
  }
  return totalFailed > 0 ? 1 : 0;
}

// --as python / c: the recorded finding as a program for a bug report. It tells what was
// recorded, so a router to rerun (--impl) has no part in it.
int runSnippet(const std::string& path, const std::string& language, bool withImpl) {
  if (withImpl) {
    std::fprintf(stderr,
                 "moe-oracle explain: --as %s writes the recorded finding; --impl (a rerun) "
                 "goes with --as text only\n",
                 language.c_str());
    return 2;
  }
  try {
    std::cout << reproducerSnippet(loadVectorFile(path), language);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moe-oracle explain: %s: %s\n", path.c_str(), e.what());
    return 2;
  }
  return 0;
}

int runExplain(const std::string& path, const std::string& impl, const std::string& language,
               const RunFlags& running, const VerdictConfig& config) {
  if (language != "text") return runSnippet(path, language, !impl.empty());
  std::unique_ptr<Router> router;
  std::unique_ptr<Dispatcher> dispatcher;
  std::unique_ptr<LayerKernel> layer;
  if (!impl.empty() && running.layerDoor(impl)) {
    if (!(layer = openLayerOrSay(impl, "explain", running.doorOptions()))) return 2;
  } else if (!impl.empty() && running.dispatchDoor(impl)) {
    if (!(dispatcher = openDispatcherOrSay(impl, "explain", running.doorOptions()))) return 2;
  } else if (!impl.empty() && !(router = openOrSay(impl, "explain", running.options()))) {
    return 2;
  }
  try {
    int unexplained = 0;
    const nlohmann::json file = loadVectorFile(path);
    std::cout << (isLayerVectorFile(file) ? explainLayerVectors(file, layer.get(), &unexplained)
                  : isDispatchVectorFile(file)
                      ? explainDispatchVectors(file, dispatcher.get(), &unexplained)
                      : explainVectors(file, router.get(), config, &unexplained));
    if (unexplained > 0) {
      std::fprintf(stderr, "moe-oracle explain: %s: %d test(s) could not be read\n", path.c_str(),
                   unexplained);
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moe-oracle explain: %s\n", e.what());
    return 2;
  }
  return 0;
}

void addFuzz(CLI::App& app, FuzzFlags& f) {
  auto* fuzz = app.add_subcommand(
      "fuzz",
      "fuzz a router against the oracle; on the first violation (or, with --keep-going, at "
      "the end) write shrunk reproducers and exit 1");
  fuzz->add_option("--impl", f.impl,
                   "built-in router name (moe-oracle list... e.g. scalar-probs), spec32, or a "
                   "shared library exporting moe_route_v1 (a value with '/' or ending in .so is "
                   "a path, relative to the current directory)")
      ->required();
  fuzz->add_option("--seconds", f.seconds, "time limit (default 10)")->check(positiveFinite(false));
  f.seedOption =
      fuzz->add_option("--seed", f.seed,
                       "seed of the case stream, 0 to 2^64-1 (default: random, "
                       "printed)")
          ->check(CLI::Validator(
              [](std::string& text) -> std::string {
                uint64_t v = 0;
                const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
                if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
                  return "--seed takes a whole number from 0 to 2^64-1, got " + text;
                }
                return "";
              },
              "0..2^64-1"));
  fuzz->add_option("--out", f.out, "where reproducers go (default ./moe-oracle-out)");
  fuzz->add_flag("--json", f.json, "print one JSON summary object on stdout");
  fuzz->add_flag("--keep-going", f.keepGoing,
                 "do not stop at the first violation: count every kind, report each once with "
                 "its smallest reproducer");
  fuzz->add_option("--experts", f.experts,
                   "experts to draw: values and ranges, e.g. 256 or 1-64,128 (default 0-4096, "
                   "or the contract's shapes)");
  fuzz->add_option("--k", f.k, "k to draw: values and ranges (default 0 to E+2 per case)");
  fuzz->add_option("--tokens", f.tokens,
                   "batch sizes to draw: values and ranges, e.g. 1-65536 (default 0-65536, "
                   "mostly small)");
  fuzz->add_option("--block", f.block,
                   "moe_dispatch_v1: blocks to draw, values and ranges (default 1-256, or the "
                   "contract's shapes)");
  fuzz->add_option("--capacity", f.capacity,
                   "moe_dispatch_v1: capacities to draw, values and ranges, -1 for no limit "
                   "(default: -1 and values around the experts' loads)");
  fuzz->add_option("--hidden", f.hidden,
                   "moe_layer_v1: hidden sizes H to draw, values and ranges (default: real "
                   "models' H, a multiple of 64 and one off it, and small H; or the contract's "
                   "shapes)");
  fuzz->add_option("--intermediate", f.intermediate,
                   "moe_layer_v1: expert intermediate sizes I to draw, values and ranges "
                   "(default: real models' I and small I; or the contract's shapes)");
  fuzz->add_option("--family", f.family,
                   "moe_route_v2: the model recipes the kernel implements, e.g. deepseek-v3 or "
                   "llama4,mixtral (each fixes every family field and the shapes E, k; "
                   "replaces the contract's families)");
  fuzz->add_option("--shrink-seconds", f.shrinkSeconds,
                   "time cap on shrinking each violation (default 10; 0: no shrinking)")
      ->check(positiveFinite(true));
  fuzz->add_option("--min-tokens", f.minTokens,
                   "fewer tokens judged than this is insufficient coverage, exit 3 (default "
                   "1000)");
  fuzz->add_option("--jobs", f.jobs,
                   "threads that judge the tokens of a case (default: the cores this process "
                   "may use); the results are the same for any number")
      ->check(CLI::Range(1, 1024));
}

int runMain(int argc, char** argv) {
  CLI::App app{
      "moe-oracle: a differential fuzzer for Mixture-of-Experts top-k routing, judged "
      "against a verified reference (exit 0: no violation, 1: violation, 2: usage, 3: "
      "insufficient coverage)"};
  app.set_version_flag("--version", std::string("moe-oracle ") + MOE_ORACLE_VERSION);
  app.require_subcommand(1);
  VerdictFlags verdict;
  RunFlags running;
  FuzzFlags f;
  addFuzz(app, f);
  verdict.add(app.get_subcommand("fuzz"));
  running.add(app.get_subcommand("fuzz"));

  std::vector<std::string> files;
  std::string replayImpl;
  bool replayJson = false;
  auto* replay = app.add_subcommand("replay",
                                    "replay golden vectors and reproducers; exit 1 on a "
                                    "failing test, 2 on input that cannot be read or holds no "
                                    "runnable test");
  replay->add_option("files", files, "vector files (JSON)")->required()->check(CLI::ExistingFile);
  replay->add_option("--impl", replayImpl, "also run this router (name or .so) on every test");
  replay->add_flag("--json", replayJson, "print a JSON summary on stdout");
  verdict.add(replay);
  running.add(replay);

  std::string explainFile, explainImpl, explainAs = "text";
  auto* explain = app.add_subcommand("explain", "tell one vector file's cases for a person");
  explain->add_option("file", explainFile, "vector file (JSON)")
      ->required()
      ->check(CLI::ExistingFile);
  explain->add_option("--impl", explainImpl,
                      "router to rerun on each case and explain (default: the recorded output, "
                      "or spec32 for RoutingTest)");
  explain
      ->add_option("--as", explainAs,
                   "text (default): the explanation for a person; python / c: each "
                   "reproducer as a self-contained PyTorch / C99 program for a bug report "
                   "(exact hex floats, the recorded output, the spec's answer, the "
                   "certificate)")
      ->check(CLI::IsMember({"text", "python", "c"}));
  verdict.add(explain);
  running.add(explain);

  ReproduceFlags reproduceFlags;
  auto* reproduce = addReproduce(app, reproduceFlags);
  auto* list = app.add_subcommand("list", "print the built-in router names, one a line");
  std::string listAbi(kAbiV1);
  list->add_option("--abi", listAbi,
                   "moe_route_v1 (default): every built-in router; moe_route_v2: one router "
                   "per distinct moe_route_v2 kernel (an ISA's probs and logits routers share "
                   "theirs)")
      ->check(CLI::IsMember({std::string(kAbiV1), std::string(kAbiV2)}));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const bool noSubcommand = app.get_subcommands().empty() &&
                              (e.get_name() == "RequiredError" || e.get_name() == "ExtrasError");
    if (noSubcommand && argc > 1 && argv[1][0] != '-') {
      std::fprintf(stderr,
                   "moe-oracle: unknown subcommand %s: the subcommands are fuzz, replay, "
                   "explain, reproduce and list (moe-oracle --help)\n",
                   argv[1]);
      return 2;
    }
    if (noSubcommand) {
      std::fprintf(stderr,
                   "moe-oracle: a subcommand is required: fuzz, replay, explain, reproduce or "
                   "list (moe-oracle --help)\n");
      return 2;
    }
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (*list) {
    const auto names = listAbi == kAbiV2 ? builtinRouterNamesV2() : builtinRouterNames();
    for (const auto& name : names) std::printf("%s\n", name.c_str());
    return 0;
  }
  if (*reproduce) return runReproduce(reproduceFlags);
  VerdictConfig config;
  try {
    config = verdict.config();
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "moe-oracle: %s\n", e.what());
    return 2;
  }
  for (const std::string* impl : {&f.impl, &replayImpl, &explainImpl}) {
    if (impl->empty()) continue;
    if (const std::string why = layerDoorAmbiguity(*impl, running.abi); !why.empty()) {
      std::fprintf(stderr, "moe-oracle: %s\n", why.c_str());
      return 2;
    }
  }
  if (*app.get_subcommand("fuzz")) {
    if (running.layerDoor(f.impl)) return runFuzzLayer(f, running);
    if (running.dispatchDoor(f.impl)) return runFuzzDispatch(f, running);
    return runFuzz(f, running.options(), config);
  }
  if (*replay) return runReplay(files, replayImpl, replayJson, running, config);
  if (*explain) return runExplain(explainFile, explainImpl, explainAs, running, config);
  return 2;
}

}  // namespace

namespace moe::fuzz {

int runCommand(int argc, char** argv) {
  return guardedMain("moe-oracle", runMain, argc, argv);
}

}  // namespace moe::fuzz
