#include "lessons/06-gate/concurrency_gate.hpp"

#include "lessons/common/tracing.hpp"

#include <mutex>

// A caller parked at a BLOCK gate, with its own condition variable so that a returned permit
// wakes exactly the waiter it is handed to.
struct ConcurrencyGate::Waiter {
    boost::fibers::condition_variable wake;
    bool granted = false;
};

std::string check_gate_options(const GateOptions& options) {
    if (options.limit < 0) return "--gate-limit must be 0 or more";
    if (options.limit == 0 && options.policy == GatePolicy::block)
        return "--gate-limit 0 with --gate-policy block would park every request forever";
    return "";
}

ConcurrencyGate::ConcurrencyGate(GateOptions options) : options_(std::move(options)) {
    if (const std::string error = check_gate_options(options_); !error.empty())
        throw std::invalid_argument(error);
}

bool ConcurrencyGate::try_take() {
    int current = in_use_.load();
    while (current < options_.limit)
        if (in_use_.compare_exchange_weak(current, current + 1)) return true;
    return false;
}

ConcurrencyGate::Permit ConcurrencyGate::enter() {
    if (!options_.armed) return Permit(nullptr);
    TraceWait verdict("gate"); // in a --trace: how long the verdict took, and which it was
    verdict.arg("verdict", "admit");
    if (try_take()) return Permit(this);
    if (options_.policy == GatePolicy::reject) {
        verdict.arg("verdict", "reject");
        rejections_.fetch_add(1, std::memory_order_relaxed);
        throw ConcurrencyLimitReached(
            "Concurrency limit reached: " + std::to_string(options_.limit) +
            " - not allowed to enter " + options_.operation);
    }
    return wait_for_permit();
}

ConcurrencyGate::Permit ConcurrencyGate::wait_for_permit() {
    std::unique_lock<boost::fibers::mutex> lock(mutex_);
    // Checked again under the lock: a permit may have come back meanwhile. Only when nobody
    // waits, or this newcomer would overtake them.
    if (waiters_.empty() && try_take()) return Permit(this);
    Waiter me;
    waiters_.push_back(&me);
    waiting_.store(static_cast<int>(waiters_.size()), std::memory_order_relaxed);
    // However long it takes: no timeout. The predicate form: Boost 1.74's condition variables
    // may wake without a notify.
    me.wake.wait(lock, [&me] { return me.granted; });
    return Permit(this); // the giver passed its permit on: in_use_ was never lowered
}

void ConcurrencyGate::give_back() {
    if (options_.policy == GatePolicy::reject) {
        in_use_.fetch_sub(1);
        return;
    }
    std::lock_guard<boost::fibers::mutex> lock(mutex_);
    if (waiters_.empty()) {
        in_use_.fetch_sub(1);
        return;
    }
    // Straight to the oldest waiter. Notified under the lock: its record lives until it has
    // the lock back.
    Waiter* oldest = waiters_.front();
    waiters_.pop_front();
    waiting_.store(static_cast<int>(waiters_.size()), std::memory_order_relaxed);
    oldest->granted = true;
    oldest->wake.notify_one();
}

ConcurrencyGate::Permit::~Permit() {
    if (gate_ != nullptr) gate_->give_back();
}

std::string ConcurrencyGate::describe() const {
    if (!options_.armed) return "disarmed (pass-through)";
    return "armed: limit " + std::to_string(options_.limit) + ", policy " +
           gate_policy_name(options_.policy);
}

void ConcurrencyGate::collect(MetricsText& out) const {
    out.gauge("gate_armed", "1 when the concurrency gate is armed, 0 when it passes all through.",
              options_.armed ? 1 : 0);
    out.gauge("gate_limit", "Calls the gate lets inside at once.", options_.limit);
    out.gauge("gate_permits_in_use", "Calls inside the gate now.", in_use());
    out.gauge("gate_waiting", "Calls parked at the gate for a permit (policy block).", waiting());
    out.counter("gate_rejections_total",
                "Calls the gate turned away (policy reject; answered 503 when mapped).",
                static_cast<double>(rejections()));
}

GatePolicy gate_policy_named(const std::string& name) {
    if (name == "reject") return GatePolicy::reject;
    if (name == "block") return GatePolicy::block;
    throw std::invalid_argument("no gate policy '" + name + "' (reject or block)");
}

const char* gate_policy_name(GatePolicy policy) {
    return policy == GatePolicy::reject ? "reject" : "block";
}
