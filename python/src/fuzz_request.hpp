// The Python door's side of the fuzz run's one table (moe/fuzz/fuzz_request.hpp): the
// keywords of fuzz, fuzz_dispatch and fuzz_layer read into a FuzzRequest through
// fuzzOptions(), the table itself for Python (fuzz_options: python -m moe_oracle builds its
// options from it, a test holds the functions' signatures to it), and a run's answer and its
// printing.
#pragma once

#include <pybind11/pybind11.h>

#include "moe/fuzz/fuzz_request.hpp"
#include "moe/fuzz/run_outcome.hpp"

namespace moe::python {

// The keywords of the function at `where` (a FuzzWhere bit): None leaves the command's
// default; a keyword the table does not give that function is a TypeError, a value its
// check refuses a ValueError. --out is made and tried here (PermissionError when it cannot
// be written), after the options, as the command does.
fuzz::FuzzRequest requestOf(const pybind11::kwargs& keywords, fuzz::FuzzWhere where);
void checkOut(const fuzz::FuzzRequest& request);
// The run's header line (moe/fuzz/run_header.hpp) on stderr, as the command starts a run,
// when the run's progress is on.
void sayHeader(const fuzz::RunOptions& options, const std::string& header);

// {summary (the --json text), text, reports, exit_code (130 when interrupted), outcome (the
// RunOutcome itself, for print_outcome)}.
pybind11::dict answerOf(const fuzz::RunOutcome& outcome, bool interrupted);

// RunOutcome (opaque) and print_outcome: python -m moe_oracle prints through the command's
// printOutcome, so the two doors' output cannot drift apart.
void bindRunOutcome(pybind11::module_& m);

void bindFuzzOptions(pybind11::module_& m);  // fuzz_options()

}  // namespace moe::python
