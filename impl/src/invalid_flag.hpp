// The invalid-operation flag of x86's MXCSR as a NaN detector for the token-parallel
// kernels. VMAXPS and VMINPS raise it for any NaN operand, quiet ones included (Intel SDM,
// MAXPS: "Invalid (including QNaN Source Operand)"), so a network of them reports a NaN
// key in any lane for nothing, where mapping each key to a number first (FiniteForKeys, a
// VFIXUPIMMPS a vector) took an operation of every vector. A kernel reads the flag once
// after a group's network and takes the rare group that raised it again by a slower path.
// The flag is sticky and the caller's: InvalidFlagScope masks the exception for the call
// (a NaN must not trap), clears the flag, and gives the caller's state back on exit.
#ifndef MOE_IMPL_INVALID_FLAG_HPP_
#define MOE_IMPL_INVALID_FLAG_HPP_

#include <cstdint>

namespace moe::detail {

inline constexpr uint32_t kMxcsrInvalid = 1u << 0;      // the sticky flag
inline constexpr uint32_t kMxcsrInvalidMask = 1u << 7;  // its exception masked
inline constexpr uint32_t kMxcsrFlags = 0x3Fu;

// Through asm with a memory clobber: what the network stored (its lists) is stored, so
// computed, before the flag is read, and nothing the compiler can see moves across.
inline uint32_t ReadMxcsr() {
  uint32_t value;
  asm volatile("stmxcsr %0" : "=m"(value) : : "memory");
  return value;
}
inline void WriteMxcsr(uint32_t value) {
  asm volatile("ldmxcsr %0" : : "m"(value) : "memory");
}

// For a kernel's call: the invalid exception masked and its flag clear; on exit the
// caller's control bits back, with its flags and every flag raised meanwhile (those the
// kernel cleared included).
class InvalidFlagScope {
 public:
  InvalidFlagScope() : caller_(ReadMxcsr()) {
    WriteMxcsr((caller_ | kMxcsrInvalidMask) & ~kMxcsrInvalid);
  }
  ~InvalidFlagScope() {
    const uint32_t flags = (caller_ | raised_ | ReadMxcsr()) & kMxcsrFlags;
    WriteMxcsr((caller_ & ~kMxcsrFlags) | flags);
  }
  InvalidFlagScope(const InvalidFlagScope&) = delete;
  InvalidFlagScope& operator=(const InvalidFlagScope&) = delete;

  // Whether the flag is raised now.
  static bool Raised() { return (ReadMxcsr() & kMxcsrInvalid) != 0; }

  // Clears the flag if raised (remembering it), so that the kernel's next read sees only
  // its own network.
  void Clear() {
    const uint32_t now = ReadMxcsr();
    if ((now & kMxcsrInvalid) != 0) {
      raised_ |= kMxcsrInvalid;
      WriteMxcsr(now & ~kMxcsrInvalid);
    }
  }

 private:
  uint32_t caller_;
  uint32_t raised_ = 0;
};

}  // namespace moe::detail

#endif  // MOE_IMPL_INVALID_FLAG_HPP_
