#include "run_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <stdexcept>

namespace moe::fuzz_campaign {

std::string ProcessResult::describe() const {
  if (timed_out) return "timed out";
  if (exited) return "exit " + std::to_string(exit_code);
  return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
}

namespace {

[[noreturn]] void execChild(const std::vector<std::string>& argv, int out_fd,
                            const ProcessLimits& limits) {
  dup2(out_fd, STDOUT_FILENO);
  dup2(out_fd, STDERR_FILENO);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, STDIN_FILENO);
  rlimit as{limits.address_space_bytes, limits.address_space_bytes};
  setrlimit(RLIMIT_AS, &as);
  rlimit core{0, 0};  // a crash must not leave a core file in the build tree
  setrlimit(RLIMIT_CORE, &core);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

}  // namespace

ProcessResult runProcess(const std::vector<std::string>& argv, const ProcessLimits& limits) {
  if (argv.empty()) throw std::invalid_argument("runProcess: empty argv");
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("runProcess: pipe failed");
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("runProcess: fork failed");
  if (pid == 0) {
    close(fds[0]);
    execChild(argv, fds[1], limits);
  }
  close(fds[1]);
  ProcessResult result;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(limits.wall_seconds);
  char buf[65536];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      result.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::min<long long>(left, 200))) < 0) continue;
    if (p.revents == 0) continue;
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;  // the child closed its output: it has ended or is ending
    if (result.output.size() < limits.max_output) result.output.append(buf, n);
  }
  close(fds[0]);
  int status = 0;
  // Output closed does not mean ended: keep the wall-clock limit while waiting.
  while (!result.timed_out && waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      result.timed_out = true;
      kill(pid, SIGKILL);
    } else {
      usleep(20000);
    }
  }
  if (result.timed_out) waitpid(pid, &status, 0);
  if (!result.timed_out && WIFEXITED(status)) {
    result.exited = true;
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

}  // namespace moe::fuzz_campaign
