// What one carrier thread shares with the pinning detector's watchdog thread.
//
// The carrier writes, from its scheduling algorithm (monitored_algorithm.hpp): since when the
// current fiber has held the carrier, and, for every turn that lasted at least the threshold,
// how it ended and how many fibers were ready to run by then. The watchdog reads that, and asks
// for a stack sample while a long turn is still going on; a signal handler running on the
// carrier thread takes it (stack_sampler.hpp) and stores it here.
//
// One writer (the carrier), one reader (the watchdog), and no locks on the carrier's side: a
// fiber switch costs a clock read and a few stores.
#pragma once

#include "turn_share.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

// A fiber's turn on its carrier that lasted at least the threshold.
struct LongTurn {
    std::int64_t start_ns = 0; // steady clock; a turn is known by its start
    std::int64_t end_ns = 0;
    const void* fiber = nullptr; // its boost::fibers::context
    int ready_waiting = 0;       // fibers ready to run when the carrier was free again
    ThreadTimes at_end;          // the carrier thread's times, read by itself as the turn ended
};

// The return addresses on the carrier thread's stack at one moment, innermost first.
struct StackSample {
    static constexpr int max_frames = 64;
    std::int64_t turn_start_ns = 0; // the turn that was running when the sample was taken
    const void* fiber = nullptr;
    std::int64_t taken_ns = 0;
    bool first_is_exact = false; // frames[0] is the interrupted instruction, not a return address
    int depth = 0;
    void* frames[max_frames] = {};
};

class CarrierMonitor {
public:
    // `label` names the carrier thread ("carrier-0#4242"); `tid` is its kernel thread id.
    CarrierMonitor(std::string label, int tid) : label_(std::move(label)), tid_(tid) {}
    CarrierMonitor(const CarrierMonitor&) = delete;
    CarrierMonitor& operator=(const CarrierMonitor&) = delete;

    const std::string& label() const { return label_; }
    int tid() const { return tid_; }

    // --- The carrier's side: called on the carrier thread only.

    // `fiber` got the carrier at `now_ns`.
    void turn_started(const void* fiber, std::int64_t now_ns) noexcept {
        fiber_.store(fiber, std::memory_order_relaxed);
        turn_start_.store(now_ns, std::memory_order_release);
    }
    // The scheduler itself runs (it looks for work, or waits for it): no fiber holds the carrier.
    void scheduler_turn() noexcept { turn_start_.store(0, std::memory_order_release); }
    // The scheduler is about to wait for work (true), or is back from waiting (false). Only while
    // it waits does the watchdog leave the carrier's times unread: the rest of the scheduler's
    // turn may be the moment just before a fiber's turn is published (turn_share.hpp).
    void parked(bool waiting) noexcept { parked_.store(waiting, std::memory_order_release); }
    // Hands a finished long turn to the watchdog. If the watchdog has fallen so far behind that
    // the queue is full, the turn is dropped and counted.
    void long_turn_ended(const LongTurn& turn) noexcept;
    // The carrier thread is ending: from now on no sample signal is sent to it.
    void retire();

    // The signal handler's side, on the carrier thread: records the stack if a sample was
    // requested. `interrupted_at` is the instruction the signal interrupted, if known.
    void take_sample(void* interrupted_at) noexcept;

    // --- The watchdog's side.

    // Start of the turn under way; 0 when no fiber holds the carrier.
    std::int64_t current_turn_start() const noexcept {
        return turn_start_.load(std::memory_order_acquire);
    }
    // Whether the scheduler waits for work (idle carrier), as parked() last said.
    bool is_parked() const noexcept { return parked_.load(std::memory_order_acquire); }
    // The oldest long turn not yet read; false when there is none.
    bool next_long_turn(LongTurn& turn) noexcept;
    std::uint64_t dropped_turns() const { return dropped_.load(std::memory_order_relaxed); }
    // Asks the carrier thread for a stack sample (sends it the sample signal). False when the
    // carrier has retired or a sample is already under way.
    bool request_sample();
    // True, with the sample, once the requested sample has been taken.
    bool collect_sample(StackSample& sample);
    // Gives up on a requested sample that never came.
    void cancel_sample();
    bool retired() const;

private:
    enum SampleState : int { idle, requested, writing, taken };

    const std::string label_;
    const int tid_;
    std::atomic<std::int64_t> turn_start_{0};
    std::atomic<const void*> fiber_{nullptr};
    std::atomic<bool> parked_{false};

    // Long turns, carrier -> watchdog: a single-producer single-consumer ring. Each entry is a
    // turn of at least the threshold, so 64 of them cover the watchdog being late by seconds.
    static constexpr std::uint32_t ring_size = 64;
    std::array<LongTurn, ring_size> ring_{};
    std::atomic<std::uint32_t> ring_head_{0}; // written by the carrier
    std::atomic<std::uint32_t> ring_tail_{0}; // written by the watchdog
    std::atomic<std::uint64_t> dropped_{0};

    std::atomic<int> sample_state_{idle};
    StackSample
        sample_; // written by the handler while `writing`, read by the watchdog once `taken`

    // Held while signalling and while retiring, so that a signal never goes to a thread that
    // has ended (its kernel thread id could belong to another thread by then).
    mutable std::mutex signal_mutex_;
    bool retired_ = false;
};
