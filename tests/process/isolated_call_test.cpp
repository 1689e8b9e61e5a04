// run_isolated: a function in a forked child, its value back; a crash, a hang or an allocation
// past the limit ends the child, never the caller.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "reprokit/process/isolated_call.h"

using namespace reprokit;

TEST(Isolated, ReturnsTheValueFromAnotherProcess) {
  const pid_t parent = ::getpid();
  IsolatedResult r = run_isolated([&] { return std::string(::getpid() != parent ? "child" : "same process"); }, {});
  EXPECT_EQ(r.end, IsolatedResult::End::returned);
  EXPECT_EQ(r.value, "child");
}

TEST(Isolated, ACrashEndsTheChildOnly) {
  IsolatedResult r = run_isolated([]() -> std::string {
    ::raise(SIGSEGV);
    return "survived";
  }, {});
  EXPECT_EQ(r.end, IsolatedResult::End::crashed);
  EXPECT_EQ(r.signal, SIGSEGV);
}

TEST(Isolated, AHangIsStoppedAtTheTimeout) {
  IsolatedLimits limits;
  limits.timeout_s = 0.5;
  auto t0 = std::chrono::steady_clock::now();
  IsolatedResult r = run_isolated([]() -> std::string {
    std::this_thread::sleep_for(std::chrono::seconds(60));
    return "late";
  }, limits);
  EXPECT_EQ(r.end, IsolatedResult::End::timed_out);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
}

TEST(Isolated, AnAllocationPastTheLimitEndsWithoutAResult) {
  IsolatedLimits limits;
  limits.extra_memory_bytes = 256LL << 20;
  IsolatedResult r = run_isolated([]() -> std::string {
    std::vector<char> big(size_t{8} << 30, 1);  // std::bad_alloc under RLIMIT_AS
    return std::string(1, big[12345]);
  }, limits);
  // std::bad_alloc leaves no result; under AddressSanitizer the failed allocation aborts instead.
  EXPECT_TRUE(r.end == IsolatedResult::End::no_result || r.end == IsolatedResult::End::crashed) << static_cast<int>(r.end);
  EXPECT_EQ(r.value, "");
}
