#include "concurrency_gate.hpp"

ConcurrencyGate::ConcurrencyGate(int limit, GatePolicy policy) : limit_(limit), policy_(policy) {
    if (limit < 1) throw std::invalid_argument("a gate needs a limit of at least 1");
}

ConcurrencyGate::ConcurrencyGate(int limit, GatePolicy policy, std::chrono::milliseconds max_wait)
    : ConcurrencyGate(limit, policy) {
    if (max_wait.count() <= 0) throw std::invalid_argument("max_wait must be positive");
    max_wait_ = max_wait;
}

ConcurrencyGate::Permit ConcurrencyGate::enter() {
    // TODO(ex5) task 1: under the limit, count the caller in and return Permit(this); at the
    // limit under GatePolicy::reject, count a rejection and throw ConcurrencyLimitReached.
    // TODO(ex5) task 2: at the limit under GatePolicy::block, wait for a place (park the fiber),
    // first come, first served.
    // TODO(ex5) task 4 (stretch): with a max_wait_, give up after it.
    throw std::logic_error("TODO(ex5) task 1: ConcurrencyGate::enter is not written yet");
}

void ConcurrencyGate::give_back() {
    // TODO(ex5) task 1: one place more (task 2: for the longest waiter, if there is one).
}

int ConcurrencyGate::in_use() const {
    // TODO(ex5) task 1
    return -1;
}

int ConcurrencyGate::waiting() const {
    // TODO(ex5) task 2
    return -1;
}

std::uint64_t ConcurrencyGate::rejections() const {
    // TODO(ex5) task 1
    return 0;
}

// ---- do not change: a Permit gives its place back exactly once ----

ConcurrencyGate::Permit::~Permit() {
    if (gate_ != nullptr) gate_->give_back();
}
