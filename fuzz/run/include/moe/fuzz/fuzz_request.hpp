// One fuzz run as asked, by either door: the command's `moe-oracle fuzz` flags and the
// Python package's keyword arguments (fuzz, fuzz_dispatch, fuzz_layer, python -m moe_oracle)
// are the fields of FuzzRequest, and fuzzOptions() is their one table: flag, keyword, field,
// check, help. The command builds its options from the table; the Python binding reads its
// keywords through it and exports it, and a test holds the Python signatures to it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "moe/fuzz/campaign.hpp"
#include "moe/fuzz/dispatch_campaign.hpp"
#include "moe/fuzz/layer_campaign.hpp"
#include "moe/fuzz/out_dir.hpp"
#include "moe/fuzz/run_loop.hpp"

namespace moe::fuzz {

// The run's own options (RunOptions: seconds, seed, outDir, ...) and what the doors make of
// the rest.
struct FuzzRequest : RunOptions {
  std::string impl;
  bool seedGiven = false;  // else a random seed, printed
  bool json = false;
  std::string experts, k, tokens, family;
  std::string block, capacity;       // the dispatch door's
  std::string hidden, intermediate;  // the layer door's
  int jobs = 0;                      // 0: the cores the process may use
  // The verdict's knobs (also replay's and explain's): < 0 or "" when not given.
  double gateFactor = -1, gateUlp = -1;
  bool noAnalyticFloor = false;
  std::string tieOrder;
  // How a shared library runs (also replay's and explain's).
  bool inProcess = false;
  double callTimeout = 0;
  std::string abi;

  // The verdict's knobs as the judge takes them (jobs left to the run).
  VerdictConfig verdictConfig() const;
};

// Which door speaks: the command (flags "--seconds") or Python (keywords "seconds"). Error
// messages name an option as the door spells it.
enum class FuzzDoor { kCommand, kPython };

// Where an option is: the command's fuzz (and, for the verdict's and the library's knobs,
// replay and explain), each Python fuzz function, python -m moe_oracle fuzz.
enum FuzzWhere : unsigned {
  kCommandFuzz = 1u << 0,
  kCommandReplay = 1u << 1,   // replay and explain too
  kPythonRouter = 1u << 2,    // moe_oracle.fuzz
  kPythonDispatch = 1u << 3,  // moe_oracle.fuzz_dispatch
  kPythonLayer = 1u << 4,     // moe_oracle.fuzz_layer
  kPythonMain = 1u << 5,      // python -m moe_oracle fuzz
};

enum class FuzzCheck { kNone, kPositive, kNonNegative, kSeed, kJobs, kTieOrder, kAbi };

using FuzzField = std::variant<std::string FuzzRequest::*, double FuzzRequest::*,
                               uint64_t FuzzRequest::*, int FuzzRequest::*, bool FuzzRequest::*>;

struct FuzzOption {
  std::string_view flag;     // the command's and python -m moe_oracle's ("" when neither)
  std::string_view keyword;  // the Python functions' ("" when none)
  FuzzField field;
  unsigned where = 0;  // FuzzWhere bits
  FuzzCheck check = FuzzCheck::kNone;
  // The Python functions' default as Python writes it ("" when no function takes it); the
  // command's is the field's in FuzzRequest{}.
  std::string_view pythonDefault;
  std::string_view help;
  bool required = false;         // the command asks for it
  bool unset = false;            // the field's default means "not given" (Python: None)
  bool invertedKeyword = false;  // keyword = not flag (analytic_floor, --no-analytic-floor)
};

// Every option of a fuzz run, in the order the command's help lists them.
std::span<const FuzzOption> fuzzOptions();

// Why a value is refused ("must be > 0 and finite"; "" when it is not): the one rule behind
// both doors' checks, which put the option and the value in front.
std::string numberProblem(FuzzCheck check, double value);
std::string textProblem(FuzzCheck check, const std::string& value);
inline constexpr int kMaxJobs = 1024;

// The run's options for each door's campaign, with the request's shapes, families, budgets
// and seed (a random one when none was given); invalid_argument says what is wrong, naming
// the option as `door` spells it. `stop` is the caller's to set.
CampaignOptions campaignOptions(const FuzzRequest& r, const Contract& contract,
                                const std::string& name, FuzzDoor door);
DispatchCampaignOptions dispatchCampaignOptions(const FuzzRequest& r,
                                                const DispatchShapes& contractShapes);
LayerCampaignOptions layerCampaignOptions(const FuzzRequest& r, const Contract& contract,
                                          FuzzDoor door);

}  // namespace moe::fuzz
