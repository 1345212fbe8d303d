// Exercise 05: a concurrency gate with two policies.
//
// Lesson 05 shows what fibers do without admission control: everything the connector accepts is
// inside the app at once, and the queue moves onto the connection pool, where late requests time
// out as 500s. Lesson 06 puts a gate in front of the work: at most `limit` callers inside at once.
// Whoever finds it full either fails at once (REJECT: the client gets a fast 503 and may retry)
// or waits for a place (BLOCK: nothing fails — and the queue has moved once more, to the gate).
#pragma once

#include <atomic>
#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/mutex.hpp>
#include <chrono>
#include <cstdint>
#include <list>
#include <stdexcept>

// ---- do not change: the graded tests use these declarations ----

enum class GatePolicy {
    reject, // at the limit, enter() throws ConcurrencyLimitReached at once
    block,  // at the limit, enter() waits for a place: first come, first served, no timeout
};

// Thrown by enter() under REJECT when the gate is full. Its message:
// "Concurrency limit reached: 10 - not allowed to enter" (the limit in the middle).
class ConcurrencyLimitReached : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class ConcurrencyGate {
public:
    // The right to be inside; given back when the Permit is destroyed, however the call ends.
    class Permit {
    public:
        Permit(Permit&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
        Permit& operator=(Permit&&) = delete;
        Permit(const Permit&) = delete;
        ~Permit();

    private:
        friend class ConcurrencyGate;
        explicit Permit(ConcurrencyGate* gate) : gate_(gate) {}
        ConcurrencyGate* gate_ = nullptr;
    };

    // At most `limit` permits at once (at least 1).
    ConcurrencyGate(int limit, GatePolicy policy);
    // Task 4 (stretch): the same, except that under BLOCK a caller waits at most `max_wait`
    // (positive); then enter() throws ConcurrencyLimitReached("Concurrency limit reached: 1 -
    // waited 100 ms") and counts a rejection. A caller that gave up is no longer waiting.
    ConcurrencyGate(int limit, GatePolicy policy, std::chrono::milliseconds max_wait);
    ConcurrencyGate(const ConcurrencyGate&) = delete;
    ConcurrencyGate& operator=(const ConcurrencyGate&) = delete;

    // A permit, by the policy. Safe from fibers on any carrier and from plain threads at once;
    // a fiber that waits (BLOCK) parks, and its carrier runs other fibers meanwhile.
    Permit enter();

    // For /metrics: safe at any time, from anywhere, without waiting.
    int in_use() const;               // permits held now
    int waiting() const;              // callers waiting for a permit now (BLOCK)
    std::uint64_t rejections() const; // ConcurrencyLimitReached thrown so far

    // ---- end of do not change ----
private:
    void give_back(); // the Permit calls it

    // A caller waiting under BLOCK: a record on its own stack, with its own condition variable,
    // so a returned place wakes exactly the caller it is handed to.
    struct Waiter {
        boost::fibers::condition_variable wake;
        bool admitted = false;
    };

    const int limit_;
    const GatePolicy policy_;
    std::chrono::milliseconds max_wait_{0}; // 0: wait as long as it takes
    // A fiber mutex: a fiber that has to wait for it parks. Held only for a few counter
    // updates, so REJECT stays fast: a rejection takes microseconds.
    boost::fibers::mutex mutex_;
    std::list<Waiter*> waiters_; // oldest first
    // Changed under the mutex, read without it (stats must never queue behind callers).
    std::atomic<int> in_use_{0};
    std::atomic<int> waiting_{0};
    std::atomic<std::uint64_t> rejections_{0};
};
