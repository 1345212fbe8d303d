// What one carrier thread shares with the pinning detector's watchdog thread.
//
// The carrier writes, from its scheduling algorithm (monitored_algorithm.hpp), which fiber holds
// it and since when, and hands over every turn that lasted at least the threshold. The watchdog
// reads the turn under way and, when it is already long, asks for a stack sample: a signal
// handler on the carrier thread takes it into a buffer here (stack_sampler.hpp).
// A fiber switch costs the carrier two clock reads and three stores; the mutex is taken only when
// a long turn ends, which is rare.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

// A fiber's turn on its carrier that lasted at least the threshold.
struct LongTurn {
    std::int64_t start_ns = 0; // steady clock; a turn is known by its start
    std::int64_t end_ns = 0;
    std::int64_t cpu_ns = 0;     // the carrier thread's own CPU time during the turn
    const void* fiber = nullptr; // its boost::fibers::context
    std::string fiber_name;      // looked up as the turn ended ("unnamed ..." if it just ended)
    int ready_waiting = 0;       // fibers ready to run on this carrier when the turn ended
};

// The return addresses on the carrier thread's stack at one moment, innermost first.
struct StackSample {
    static constexpr int max_frames = 64;
    std::int64_t turn_start_ns = 0; // the turn under way when it was taken
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

    // --- The carrier's side.
    void turn_started(const void* fiber, std::int64_t now_ns) noexcept {
        // 0 first: a reader that sees the new fiber then cannot see the old turn's start.
        turn_start_.store(0, std::memory_order_relaxed);
        fiber_.store(fiber, std::memory_order_release);
        turn_start_.store(now_ns, std::memory_order_release);
    }
    void scheduler_turn() noexcept { turn_start_.store(0, std::memory_order_release); }
    void long_turn_ended(const LongTurn& turn);
    void retire(); // the carrier thread ends: no more signals to it
    // In the signal handler: records the stack if a sample was asked for. Async-signal-safe.
    void take_sample(void* interrupted_at) noexcept;

    // --- The watchdog's side.
    // The turn under way: its start and its fiber, read consistently. False when no fiber holds
    // the carrier, or a switch happened while reading (look again next time).
    bool current_turn(std::int64_t& start_ns, const void*& fiber) const noexcept {
        start_ns = turn_start_.load(std::memory_order_acquire);
        if (start_ns == 0) return false;
        fiber = fiber_.load(std::memory_order_acquire);
        return turn_start_.load(std::memory_order_acquire) == start_ns;
    }
    std::vector<LongTurn> take_long_turns();
    bool retired() const;
    // Sends the carrier thread the sample signal; false if it has retired or a sample is pending.
    bool request_sample();
    bool collect_sample(StackSample& sample); // true once the requested sample is there

private:
    enum SampleState : int { idle, requested, writing, taken };

    const std::string label_;
    const int tid_;
    std::atomic<std::int64_t> turn_start_{0};
    std::atomic<const void*> fiber_{nullptr};
    std::atomic<int> sample_state_{idle};
    StackSample sample_; // written by the handler while `writing`, read once `taken`

    // Guards the turns and `retired_`, and is held while signalling, so that no signal goes to a
    // thread that has ended (its thread id may already be another thread's).
    mutable std::mutex mutex_;
    std::vector<LongTurn> long_turns_;
    bool retired_ = false;
};
