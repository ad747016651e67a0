#include "snippet_parts.hpp"

namespace moe::fuzz {

std::string commented(const std::string& text, const char* prefix) {
  std::string out = prefix;
  for (char ch : text) {
    out += ch;
    if (ch == '\n') out += prefix;
  }
  return out;
}

std::string noneOfDue(const std::vector<DueStatus>& due) {
  std::string condition;
  for (const DueStatus& d : due) {
    condition += fmt::format("{}status != {}", condition.empty() ? "" : " && ", d.status);
  }
  return condition;
}

}  // namespace moe::fuzz
