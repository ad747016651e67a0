#include "python_errors.hpp"

#include <cctype>

namespace py = pybind11;

namespace moe::python {

std::string exceptionTag(const py::error_already_set& e) {
  std::string name = "Exception";
  try {
    name = py::handle(e.type()).attr("__name__").cast<std::string>();
  } catch (const std::exception&) {
  }
  for (char& ch : name) {
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_')) ch = '_';
  }
  return name;
}

std::string exceptionTraceback(const py::error_already_set& e) {
  try {
    py::object frames = e.trace();
    if (!frames.is_none() && !frames.attr("tb_next").is_none()) frames = frames.attr("tb_next");
    py::list lines =
        py::module_::import("traceback").attr("format_exception")(e.type(), e.value(), frames);
    std::string text;
    for (const py::handle line : lines) text += line.cast<std::string>();
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    return text;
  } catch (const std::exception&) {
    return e.what();  // pybind11's rendering, when the traceback module itself fails
  }
}

}  // namespace moe::python
