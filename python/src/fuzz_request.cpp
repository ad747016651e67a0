#include "fuzz_request.hpp"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>

namespace py = pybind11;

namespace moe::python {

namespace {

const fuzz::FuzzOption* optionOf(const std::string& keyword, fuzz::FuzzWhere where) {
  for (const fuzz::FuzzOption& o : fuzz::fuzzOptions()) {
    if (o.keyword == keyword && (o.where & where) != 0) return &o;
  }
  return nullptr;
}

std::string reprOf(const py::handle& value) {
  return py::repr(value).cast<std::string>();
}

// A whole number of the table (no bool, no float).
template <class T>
T wholeNumber(const fuzz::FuzzOption& o, const py::handle& value) {
  const std::string why = o.check == fuzz::FuzzCheck::kJobs
                              ? fuzz::numberProblem(o.check, 0)
                              : std::string("must be a whole number >= 0");
  if (py::isinstance<py::bool_>(value) || !py::isinstance<py::int_>(value)) {
    throw std::invalid_argument(fmt::format("{}: {} {}", o.keyword, reprOf(value), why));
  }
  try {
    const T v = value.cast<T>();
    if (const std::string problem = fuzz::numberProblem(o.check, static_cast<double>(v));
        !problem.empty()) {
      throw std::invalid_argument(fmt::format("{}: {} {}", o.keyword, reprOf(value), problem));
    }
    return v;
  } catch (const py::cast_error&) {
    throw std::invalid_argument(fmt::format("{}: {} {}", o.keyword, reprOf(value), why));
  }
}

void setField(fuzz::FuzzRequest& r, const fuzz::FuzzOption& o, const py::handle& value) {
  std::visit(
      [&](auto member) {
        auto& field = r.*member;
        using T = std::decay_t<decltype(field)>;
        if constexpr (std::is_same_v<T, bool>) {
          field = value.cast<bool>() != o.invertedKeyword;
        } else if constexpr (std::is_same_v<T, std::string>) {
          const py::object text = py::isinstance<py::str>(value)
                                      ? py::reinterpret_borrow<py::object>(value)
                                      : py::module_::import("os").attr("fspath")(value);
          field = text.cast<std::string>();
          if (const std::string why = fuzz::textProblem(o.check, field); !why.empty()) {
            throw std::invalid_argument(fmt::format("{}: {} {}", o.keyword, field, why));
          }
        } else if constexpr (std::is_same_v<T, double>) {
          field = value.cast<double>();
          if (const std::string why = fuzz::numberProblem(o.check, field); !why.empty()) {
            throw std::invalid_argument(fmt::format("{}: {} {}", o.keyword, reprOf(value), why));
          }
        } else {
          field = wholeNumber<T>(o, value);
        }
      },
      o.field);
}

std::string_view kindOf(const fuzz::FuzzField& field) {
  switch (field.index()) {
    case 0:
      return "text";
    case 1:
      return "number";
    case 4:
      return "flag";
    default:
      return "whole";
  }
}

py::object defaultOf(const fuzz::FuzzOption& o) {
  if (o.unset) return py::none();
  static const fuzz::FuzzRequest kDefaults;
  return std::visit([](auto member) { return py::cast(kDefaults.*member); }, o.field);
}

py::list whereOf(unsigned where) {
  py::list names;
  const std::pair<unsigned, const char*> kNames[] = {
      {fuzz::kCommandFuzz, "command"},    {fuzz::kCommandReplay, "replay"},
      {fuzz::kPythonRouter, "fuzz"},      {fuzz::kPythonDispatch, "fuzz_dispatch"},
      {fuzz::kPythonLayer, "fuzz_layer"}, {fuzz::kPythonMain, "main"}};
  for (const auto& [bit, name] : kNames) {
    if ((where & bit) != 0) names.append(name);
  }
  return names;
}

py::object choicesOf(fuzz::FuzzCheck check) {
  if (check == fuzz::FuzzCheck::kTieOrder)
    return py::cast(std::vector<std::string>{"lowest-index", "any"});
  return py::none();
}

}  // namespace

fuzz::FuzzRequest requestOf(const py::kwargs& keywords, fuzz::FuzzWhere where) {
  fuzz::FuzzRequest r;
  r.progress = false;
  for (const auto& [key, value] : keywords) {
    const std::string keyword = key.cast<std::string>();
    const fuzz::FuzzOption* o = optionOf(keyword, where);
    if (o == nullptr) throw py::type_error("unexpected keyword argument " + keyword);
    if (value.is_none()) continue;
    setField(r, *o, value);
    if (o->check == fuzz::FuzzCheck::kSeed) r.seedGiven = true;
  }
  return r;
}

void checkOut(const fuzz::FuzzRequest& request) {
  if (const std::string why = fuzz::outProblem(request.outDir); !why.empty()) {
    PyErr_SetString(PyExc_PermissionError, ("out: " + why).c_str());
    throw py::error_already_set();
  }
}

void sayHeader(const fuzz::RunOptions& options, const std::string& header) {
  if (!options.progress) return;
  py::module_::import("sys").attr("stderr").attr("flush")();
  std::fputs(header.c_str(), stderr);
}

py::dict answerOf(const fuzz::RunOutcome& outcome, bool interrupted) {
  py::dict answer;
  answer["summary"] = outcome.summary.dump();
  answer["text"] = outcome.text;
  answer["reports"] = outcome.reports;
  answer["exit_code"] = interrupted ? 130 : outcome.exitCode;
  answer["outcome"] = py::cast(outcome);
  return answer;
}

void bindRunOutcome(py::module_& m) {
  py::class_<fuzz::RunOutcome>(
      m, "RunOutcome",
      "A fuzz run's outcome as the command holds it; print_outcome prints it as the command "
      "does.");
  m.def(
      "print_outcome",
      [](const fuzz::RunOutcome& outcome, bool json, int signal) {
        const volatile std::sig_atomic_t stop = signal;
        const int code = fuzz::printOutcome(outcome, json, &stop);
        std::cout.flush();
        std::fflush(stdout);
        std::fflush(stderr);
        return code;
      },
      py::arg("outcome"), py::arg("json"), py::arg("signal") = 0,
      "Prints the outcome through the command's own printer (printOutcome): the reports and "
      "the summary on stderr; on stdout the JSON summary (json) or each finding's reproducer "
      "path and signature line. Returns the command's exit code: 128 + signal when signal is "
      "not 0, else the run's. Python's own sys.stdout and sys.stderr are to be flushed first.");
}

void bindFuzzOptions(py::module_& m) {
  m.def(
      "fuzz_options",
      [] {
        py::list options;
        for (const fuzz::FuzzOption& o : fuzz::fuzzOptions()) {
          py::dict d;
          d["flag"] = std::string(o.flag);
          d["keyword"] = std::string(o.keyword);
          d["kind"] = std::string(kindOf(o.field));
          d["default"] = defaultOf(o);
          d["python_default"] = std::string(o.pythonDefault);
          d["where"] = whereOf(o.where);
          d["help"] = std::string(o.help);
          d["choices"] = choicesOf(o.check);
          d["inverted"] = o.invertedKeyword;
          options.append(d);
        }
        return options;
      },
      "The fuzz run's one table of options: flag, keyword, kind (text, number, whole, flag), "
      "the command's default (None: not given), the Python functions' default as Python "
      "writes it, where it is (command, replay, fuzz, fuzz_dispatch, fuzz_layer, main), help, "
      "choices, inverted (keyword = not flag).");
}

}  // namespace moe::python
