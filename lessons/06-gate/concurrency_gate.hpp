// The gate: at most `limit` calls inside a guarded operation at once, in the spirit of Spring's
// @ConcurrencyLimit. Whoever finds it full either fails at once or waits, by the policy:
//
//   REJECT  enter() throws ConcurrencyLimitReached at once: "Concurrency limit reached: 10 -
//           not allowed to enter WorkService::do_work". The caller answers quickly (503, once
//           the application maps the error; see rejection_mapping.hpp) and the client may
//           retry later. Nothing queues: the excess is turned away in microseconds.
//   BLOCK   enter() parks the caller until a permit frees, first come first served, with NO
//           timeout. That is the gotcha: it moves the queue again, from the database pool to
//           the gate, and a caller waits for as long as the queue ahead of it takes. Nothing
//           fails, nothing is fast.
//
// The gate is always in the code path; `armed` decides whether it does anything. Disarmed, it
// is a pass-through: enter() returns at once and counts nothing. Lesson 06 arms it only in the
// vt-gated profile, so the three profiles run the same code.
//
// Thread safety: enter() may be called from fibers on any carrier and from plain threads.
// REJECT needs no lock (one compare-and-swap on a counter). BLOCK queues its waiters under a
// boost::fibers mutex, each on its own condition variable (which parks a fiber and blocks a
// plain thread), and a returned permit passes straight to the oldest waiter, as lesson 04's
// pool hands over connections: a newcomer cannot overtake the queue.
#pragma once

#include "lessons/05-wirings/metrics_text.hpp"

#include <atomic>
#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/mutex.hpp>
#include <cstdint>
#include <list>
#include <stdexcept>
#include <string>

enum class GatePolicy { reject, block };

// Thrown by enter() under REJECT when the gate is full.
class ConcurrencyLimitReached : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct GateOptions {
    // Calls inside at once. 10 = the pool's size: more could only wait for a connection.
    // 0 admits nobody (every call is rejected), which is allowed under REJECT only.
    int limit = 10;
    GatePolicy policy = GatePolicy::reject;
    bool armed = false;
    // Named in the rejection's message.
    std::string operation = "WorkService::do_work";
};

// What is wrong with `options` ("--gate-limit must be ..."), or "" when they make a gate.
std::string check_gate_options(const GateOptions& options);

class ConcurrencyGate {
public:
    // The right to be inside; returned when the Permit is destroyed (RAII: an exception in the
    // guarded call cannot leak it).
    class Permit {
    public:
        Permit(Permit&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
        Permit& operator=(Permit&&) = delete;
        Permit(const Permit&) = delete;
        ~Permit();

    private:
        friend class ConcurrencyGate;
        explicit Permit(ConcurrencyGate* gate) : gate_(gate) {}
        ConcurrencyGate* gate_; // nullptr: a disarmed gate's permit, or moved from
    };

    // Throws std::invalid_argument when check_gate_options finds a problem.
    explicit ConcurrencyGate(GateOptions options);

    // A permit, by the policy: see the top of this file.
    Permit enter();

    const GateOptions& options() const { return options_; }
    // "armed: limit 10, policy reject" or "disarmed (pass-through)".
    std::string describe() const;

    int in_use() const { return in_use_.load(std::memory_order_relaxed); }
    int waiting() const { return waiting_.load(std::memory_order_relaxed); }
    std::uint64_t rejections() const { return rejections_.load(std::memory_order_relaxed); }

    // gate_armed, gate_limit, gate_permits_in_use, gate_waiting, gate_rejections_total.
    void collect(MetricsText& out) const;

private:
    struct Waiter;
    bool try_take();
    Permit wait_for_permit();
    void give_back();

    const GateOptions options_;
    std::atomic<int> in_use_{0};
    std::atomic<int> waiting_{0};
    std::atomic<std::uint64_t> rejections_{0};
    boost::fibers::mutex mutex_; // BLOCK only: guards waiters_ (and in_use_ changes)
    std::list<Waiter*> waiters_; // oldest first
};

// "reject" / "block"; throws std::invalid_argument for anything else.
GatePolicy gate_policy_named(const std::string& name);
const char* gate_policy_name(GatePolicy policy);
