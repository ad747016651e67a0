// The command's side of the fuzz run's one table (moe/fuzz/fuzz_request.hpp): CLI11 options
// made from fuzzOptions(), and the part of `moe-oracle fuzz` every door shares.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "moe/fuzz/fuzz_request.hpp"
#include "moe/fuzz/run_outcome.hpp"

namespace moe::fuzz {

// Adds to `cmd` every option of the table that is at `where` (kCommandFuzz: fuzz's;
// kCommandReplay: the verdict's and the library's knobs of replay and explain), bound to the
// fields of `request`. Returns --seed's option when it is added (else nullptr).
CLI::Option* addFuzzOptions(CLI::App* cmd, FuzzRequest& request, FuzzWhere where);

// What every door does once its kernel is open and its options made: --out made and tried
// (exit 2 when it cannot be written), the run's header on stderr, the run, its outcome
// printed. Returns the exit code.
int fuzzRun(const FuzzRequest& request, const std::string& header,
            const std::function<RunOutcome()>& run, const volatile std::sig_atomic_t* stop);

}  // namespace moe::fuzz
