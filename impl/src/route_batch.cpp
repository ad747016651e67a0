// Argument checks and threads over tokens, shared by every built-in router. Tokens are
// split into contiguous chunks; each row is computed by the same code whatever chunk it
// lands in, so the output is bitwise independent of the thread count.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include "moe/detail/route_kernels.hpp"
#include "moe/route_abi.h"

namespace moe::detail {
namespace {

// Below this many logits per thread, another thread costs more than it saves.
constexpr int64_t kMinLogitsPerThread = 1 << 15;

// No buffer is larger than a 64-bit address space's 2^48 bytes: sizes beyond are absurd
// (and their byte counts close to overflowing ptrdiff_t).
bool bytesFit(int64_t a, int64_t b) {
  constexpr uint64_t kMaxBytes = uint64_t{1} << 48;
  return static_cast<uint64_t>(a) * static_cast<uint64_t>(b) <= kMaxBytes / sizeof(float);
}

int checkArgs(int32_t tokens, int32_t experts, int32_t k, const float* logits, const int32_t* ids,
              const float* gates, int32_t threads) {
  if (tokens < 0 || experts < 0 || k < 0 || threads < 0) return MOE_ROUTE_EBADSIZE;
  const int64_t logitCount = int64_t{tokens} * experts;
  const int64_t slotCount = int64_t{tokens} * k;
  if ((logitCount > 0 && logits == nullptr) ||
      (slotCount > 0 && (ids == nullptr || gates == nullptr))) {
    return MOE_ROUTE_ENULL;
  }
  if (!bytesFit(tokens, experts) || !bytesFit(tokens, k)) return MOE_ROUTE_EOVERFLOW;
  return MOE_ROUTE_OK;
}

int32_t workerCount(int32_t tokens, int32_t experts, int32_t threads) {
  int64_t want = threads;
  if (want == 0) want = std::max(1u, std::thread::hardware_concurrency());
  const int64_t byWork = std::max<int64_t>(1, int64_t{tokens} * experts / kMinLogitsPerThread);
  return static_cast<int32_t>(std::min({want, byWork, int64_t{tokens}}));
}

}  // namespace

int runChunks(int32_t tokens, int32_t experts, int32_t threads,
              const std::function<void(int64_t begin, int64_t end)>& fn) {
  const int32_t workers = workerCount(tokens, experts, threads);
  auto chunk = [&](int32_t w) {
    fn(int64_t{tokens} * w / workers, int64_t{tokens} * (w + 1) / workers);
  };
  try {
    if (workers == 1) {
      chunk(0);
      return MOE_ROUTE_OK;
    }
    std::vector<std::exception_ptr> errors(static_cast<size_t>(workers));
    std::vector<std::thread> pool;
    pool.reserve(static_cast<size_t>(workers - 1));
    auto guardedChunk = [&](int32_t w) {
      try {
        chunk(w);
      } catch (...) {
        errors[static_cast<size_t>(w)] = std::current_exception();
      }
    };
    std::vector<int32_t> onThisThread{0};
    for (int32_t w = 1; w < workers; ++w) {
      try {
        pool.emplace_back(guardedChunk, w);
      } catch (...) {  // no thread to be had: do that chunk here, same result
        onThisThread.push_back(w);
      }
    }
    for (const int32_t w : onThisThread) guardedChunk(w);
    for (auto& t : pool) t.join();
    for (const auto& e : errors) {
      if (e) return MOE_ROUTE_EINTERNAL;
    }
    return MOE_ROUTE_OK;
  } catch (...) {  // std::bad_alloc, std::system_error from std::thread
    return MOE_ROUTE_EINTERNAL;
  }
}

int runRows(RowsFn rows, int32_t tokens, int32_t experts, int32_t k, const float* logits,
            int32_t* ids, float* gates, int32_t threads) {
  if (const int rc = checkArgs(tokens, experts, k, logits, ids, gates, threads); rc != 0) {
    return rc;
  }
  if (tokens == 0 || k == 0) return MOE_ROUTE_OK;
  if (experts == 0) {
    std::fill(ids, ids + int64_t{tokens} * k, -1);
    std::fill(gates, gates + int64_t{tokens} * k, 0.0f);
    return MOE_ROUTE_OK;
  }
  return runChunks(tokens, experts, threads, [&](int64_t begin, int64_t end) {
    rows(logits + begin * experts, end - begin, experts, k, ids + begin * k, gates + begin * k);
  });
}

}  // namespace moe::detail
