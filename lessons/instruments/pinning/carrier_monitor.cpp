#include "lessons/instruments/pinning/carrier_monitor.hpp"

#include "lessons/instruments/pinning/stack_sampler.hpp"

#include <algorithm>
#include <chrono>
#include <execinfo.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <utility>

void CarrierMonitor::long_turn_ended(const LongTurn& turn) {
    std::lock_guard<std::mutex> lock(mutex_);
    // Nobody reads them once the detector has stopped; a carrier that outlives it must not grow.
    if (long_turns_.size() < 1000) long_turns_.push_back(turn);
}

std::vector<LongTurn> CarrierMonitor::take_long_turns() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::exchange(long_turns_, {});
}

void CarrierMonitor::retire() {
    std::lock_guard<std::mutex> lock(mutex_);
    retired_ = true;
}

bool CarrierMonitor::retired() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return retired_;
}

bool CarrierMonitor::request_sample() {
    std::lock_guard<std::mutex> lock(mutex_);
    int expected = idle;
    if (retired_ || !sample_state_.compare_exchange_strong(expected, requested)) return false;
    if (::syscall(SYS_tgkill, ::getpid(), tid_, sample_signal()) != 0) {
        sample_state_.store(idle);
        return false;
    }
    return true;
}

bool CarrierMonitor::collect_sample(StackSample& sample) {
    if (sample_state_.load(std::memory_order_acquire) != taken) return false;
    sample = sample_;
    sample_state_.store(idle, std::memory_order_release);
    return true;
}

void CarrierMonitor::take_sample(void* interrupted_at) noexcept {
    int expected = requested;
    if (!sample_state_.compare_exchange_strong(expected, writing, std::memory_order_acquire))
        return;
    // backtrace() starts in this handler and passes the kernel's signal frame; what matters
    // starts at the interrupted instruction.
    void* raw[StackSample::max_frames + 8];
    const int depth = ::backtrace(raw, StackSample::max_frames + 8);
    int first = 0;
    while (first < depth && raw[first] != interrupted_at)
        ++first;
    const bool found = interrupted_at != nullptr && first < depth;
    if (!found) first = std::min(depth, 2); // this handler and the kernel's trampoline
    sample_.depth = std::min(depth - first, StackSample::max_frames);
    std::copy(raw + first, raw + first + sample_.depth, sample_.frames);
    sample_.first_is_exact = found;
    sample_.turn_start_ns = turn_start_.load(std::memory_order_relaxed);
    sample_.taken_ns = std::chrono::steady_clock::now().time_since_epoch().count();
    sample_state_.store(taken, std::memory_order_release);
}
