#include "concurrency_gate.hpp"

#include <mutex>
#include <string>

ConcurrencyGate::ConcurrencyGate(int limit, GatePolicy policy) : limit_(limit), policy_(policy) {
    if (limit < 1) throw std::invalid_argument("a gate needs a limit of at least 1");
}

ConcurrencyGate::ConcurrencyGate(int limit, GatePolicy policy, std::chrono::milliseconds max_wait)
    : ConcurrencyGate(limit, policy) {
    if (max_wait.count() <= 0) throw std::invalid_argument("max_wait must be positive");
    max_wait_ = max_wait;
}

ConcurrencyGate::Permit ConcurrencyGate::enter() {
    std::unique_lock<boost::fibers::mutex> lock(mutex_);
    if (in_use_ < limit_) {
        ++in_use_;
        return Permit(this);
    }
    if (policy_ == GatePolicy::reject) {
        ++rejections_;
        throw ConcurrencyLimitReached("Concurrency limit reached: " + std::to_string(limit_) +
                                      " - not allowed to enter");
    }
    // BLOCK: queue up and park, as long as it takes (lesson 06's design) or at most max_wait_.
    Waiter me;
    waiters_.push_back(&me);
    ++waiting_;
    if (max_wait_.count() == 0) {
        me.wake.wait(lock, [&] { return me.admitted; });
    } else if (!me.wake.wait_for(lock, max_wait_, [&] { return me.admitted; })) {
        // Not admitted, and we hold the lock: nobody can hand us a place now. Leave the queue,
        // or a later give_back() would hand its place to a caller who is gone, and lose it.
        waiters_.remove(&me);
        --waiting_;
        ++rejections_;
        throw ConcurrencyLimitReached("Concurrency limit reached: " + std::to_string(limit_) +
                                      " - waited " + std::to_string(max_wait_.count()) + " ms");
    }
    return Permit(this); // give_back() handed us its place: in_use_ already counts it
}

void ConcurrencyGate::give_back() {
    std::lock_guard<boost::fibers::mutex> lock(mutex_);
    if (waiters_.empty()) {
        --in_use_;
        return;
    }
    // The place goes straight to the oldest waiter, so a newcomer cannot take it first.
    // Notified under the lock: the record lives on the waiter's stack.
    Waiter* oldest = waiters_.front();
    waiters_.pop_front();
    --waiting_;
    oldest->admitted = true;
    oldest->wake.notify_one();
}

int ConcurrencyGate::in_use() const {
    return in_use_.load();
}

int ConcurrencyGate::waiting() const {
    return waiting_.load();
}

std::uint64_t ConcurrencyGate::rejections() const {
    return rejections_.load();
}

// ---- do not change: a Permit gives its place back exactly once ----

ConcurrencyGate::Permit::~Permit() {
    if (gate_ != nullptr) gate_->give_back();
}
