// The judging pool (judge_pool.hpp): workers that sleep on a condition variable between
// batches, so that a case of a few hundred tokens is worth splitting.
#include "judge_pool.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz {

namespace {

class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      quit_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }

  void run(int jobs, size_t chunks, const std::function<void(size_t)>& work) {
    std::lock_guard<std::mutex> one(runMutex_);  // one batch at a time
    const int helpers = jobs - 1;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (static_cast<int>(threads_.size()) < helpers) {
        threads_.emplace_back([this, id = static_cast<int>(threads_.size())] { loop(id); });
      }
      work_ = &work;
      chunks_ = chunks;
      next_.store(0);
      active_ = helpers;
      helpers_ = helpers;
      ++batch_;
    }
    wake_.notify_all();
    take(work);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return active_ == 0; });
    work_ = nullptr;
  }

 private:
  void take(const std::function<void(size_t)>& work) {
    for (size_t c = next_.fetch_add(1); c < chunks_; c = next_.fetch_add(1)) work(c);
  }

  void loop(int id) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return quit_ || (batch_ != seen && id < helpers_); });
      if (quit_) return;
      seen = batch_;
      const auto* work = work_;
      lock.unlock();
      take(*work);
      lock.lock();
      if (--active_ == 0) done_.notify_one();
    }
  }

  std::mutex runMutex_, mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  const std::function<void(size_t)>* work_ = nullptr;
  size_t chunks_ = 0;
  std::atomic<size_t> next_{0};
  int active_ = 0, helpers_ = 0;
  uint64_t batch_ = 0;
  bool quit_ = false;
};

}  // namespace

void runChunks(int jobs, size_t chunks, const std::function<void(size_t)>& work) {
  if (jobs <= 1 || chunks <= 1) {
    for (size_t c = 0; c < chunks; ++c) work(c);
    return;
  }
  static Pool pool;
  pool.run(jobs, chunks, work);
}

int availableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

}  // namespace moe::fuzz
