#include "concurrency_gate.hpp"

#include <mutex>
#include <string>

ConcurrencyGate::ConcurrencyGate(int limit, GatePolicy policy) : limit_(limit), policy_(policy) {
    if (limit < 1) throw std::invalid_argument("a gate needs a limit of at least 1");
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
    // BLOCK: queue up and park. No timeout, by design: nothing fails, and the caller waits as
    // long as the queue ahead of it takes.
    Waiter me;
    waiters_.push_back(&me);
    ++waiting_;
    me.wake.wait(lock, [&] { return me.admitted; });
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
