// The threads that judge the tokens of a case (--jobs): one pool for the process, grown to
// the largest number asked for, whose workers take numbered chunks of work in turn. The
// caller works too, and returns when every chunk is done.
#pragma once

#include <cstddef>
#include <functional>

namespace moe::fuzz {

// Runs work(0), ..., work(chunks - 1) on up to `jobs` threads (the caller's included).
// work must not throw.
void runChunks(int jobs, size_t chunks, const std::function<void(size_t)>& work);

}  // namespace moe::fuzz
