#pragma once
// The one exception type of the oracle: every rejected input (NaN score, mismatched sizes,
// a row that is not a real number, an out-of-range index) says what and where.
#include <stdexcept>
#include <string>

namespace moe::oracle {

class SpecError : public std::invalid_argument {
 public:
  explicit SpecError(const std::string& what) : std::invalid_argument("moe::oracle: " + what) {}
};

// Throws SpecError("<what>: <a> vs <b>") when two sizes that must agree do not.
inline void requireSameSize(const char* what, std::size_t a, std::size_t b) {
  if (a != b) {
    throw SpecError(std::string(what) + ": sizes differ (" + std::to_string(a) + " vs " +
                    std::to_string(b) + ")");
  }
}

}  // namespace moe::oracle
