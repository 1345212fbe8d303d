#include "carrier_monitor.hpp"

#include "stack_sampler.hpp"

#include <algorithm>
#include <chrono>
#include <execinfo.h>
#include <signal.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

void CarrierMonitor::long_turn_ended(const LongTurn& turn) noexcept {
    const std::uint32_t head = ring_head_.load(std::memory_order_relaxed);
    if (head - ring_tail_.load(std::memory_order_acquire) == ring_size) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    ring_[head % ring_size] = turn;
    ring_head_.store(head + 1, std::memory_order_release);
}

bool CarrierMonitor::next_long_turn(LongTurn& turn) noexcept {
    const std::uint32_t tail = ring_tail_.load(std::memory_order_relaxed);
    if (tail == ring_head_.load(std::memory_order_acquire)) return false;
    turn = ring_[tail % ring_size];
    ring_tail_.store(tail + 1, std::memory_order_release);
    return true;
}

void CarrierMonitor::retire() {
    std::lock_guard<std::mutex> lock(signal_mutex_);
    retired_ = true;
}

bool CarrierMonitor::retired() const {
    std::lock_guard<std::mutex> lock(signal_mutex_);
    return retired_;
}

bool CarrierMonitor::request_sample() {
    std::lock_guard<std::mutex> lock(signal_mutex_);
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

void CarrierMonitor::cancel_sample() {
    int expected = requested;
    if (sample_state_.compare_exchange_strong(expected, idle)) return;
    // The handler is writing right now (a few microseconds) or has finished: let it finish.
    // Sleep, not spin: the watchdog may run at real-time priority, and a spin would keep the
    // carrier, if it shares the watchdog's CPU, from ever finishing.
    while (sample_state_.load(std::memory_order_acquire) == writing)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    sample_state_.store(idle, std::memory_order_release);
}

void CarrierMonitor::take_sample(void* interrupted_at) noexcept {
    // Only async-signal-safe work below: no allocation, no locks, no stdio.
    int expected = requested;
    if (!sample_state_.compare_exchange_strong(expected, writing, std::memory_order_acquire))
        return;
    // backtrace() starts inside this handler and passes the kernel's signal frame; the
    // interesting part starts at the interrupted instruction.
    void* raw[StackSample::max_frames + 8];
    const int depth = ::backtrace(raw, StackSample::max_frames + 8);
    int first = 0;
    while (first < depth && raw[first] != interrupted_at)
        ++first;
    const bool found = interrupted_at != nullptr && first < depth;
    if (!found) first = std::min(depth, 2); // this handler and the kernel's signal trampoline
    sample_.depth = std::min(depth - first, StackSample::max_frames);
    std::copy(raw + first, raw + first + sample_.depth, sample_.frames);
    sample_.first_is_exact = found;
    sample_.turn_start_ns = turn_start_.load(std::memory_order_relaxed);
    sample_.fiber = fiber_.load(std::memory_order_relaxed);
    sample_.taken_ns = std::chrono::steady_clock::now().time_since_epoch().count();
    sample_state_.store(taken, std::memory_order_release);
}
