#include "pool.hpp"

#include <mutex>
#include <string>

Pool::Pool(int size, std::chrono::milliseconds checkout_timeout)
    : size_(size), checkout_timeout_(checkout_timeout) {
    if (size < 1) throw std::invalid_argument("a pool needs at least one resource");
    for (int id = 0; id < size; ++id)
        free_.push_back(id);
    publish_locked(); // nobody else can see the pool yet
}

Pool::Pool(int size, std::chrono::milliseconds checkout_timeout, Handover handover)
    : Pool(size, checkout_timeout) {
    handover_ = handover;
}

Pool::Lease Pool::borrow(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::unique_lock<boost::fibers::mutex> lock(mutex_);
    // A free resource is anyone's. Under fifo, while borrowers wait, give_back() hands returned
    // resources straight to them, so nothing is free and a newcomer cannot overtake them; under
    // barging that is exactly what may happen.
    if (!free_.empty()) {
        const int id = free_.front();
        free_.pop_front();
        publish_locked();
        return Lease(this, id);
    }
    Waiter me;
    const auto my_place = waiters_.insert(waiters_.end(), &me);
    publish_locked();
    // The predicate form: Boost 1.74's wait_until may report a timeout after a notify.
    const bool barging = handover_ == Handover::barging;
    if (me.wake.wait_until(lock, deadline,
                           [&] { return me.granted >= 0 || (barging && !free_.empty()); })) {
        if (me.granted >= 0) return Lease(this, me.granted); // give_back() took us off the queue
        // Barging: woken, and nobody took the freed resource before we ran. Take it.
        waiters_.erase(my_place);
        const int id = free_.front();
        free_.pop_front();
        publish_locked();
        return Lease(this, id);
    }
    waiters_.erase(my_place);
    publish_locked();
    throw PoolTimeout("Resource is not available, request timed out after " +
                      std::to_string(timeout.count()) + "ms (total=" + std::to_string(size_) +
                      ", active=" + std::to_string(active_.load()) +
                      ", idle=" + std::to_string(idle_.load()) +
                      ", waiting=" + std::to_string(waiters_.size()) + ")");
}

void Pool::give_back(int id) {
    std::lock_guard<boost::fibers::mutex> lock(mutex_);
    if (waiters_.empty()) {
        free_.push_back(id);
    } else if (handover_ == Handover::barging) {
        // Free for whoever asks first; the oldest waiter is woken to try. If someone else gets
        // there first, its predicate fails and it waits on, still first in the queue.
        free_.push_back(id);
        waiters_.front()->wake.notify_one();
    } else {
        // First come, first served: the oldest waiter gets it, before anyone else can run.
        // Notified under the lock, because the waiter's record lives on its stack: once it
        // has the lock and sees `granted`, it returns and the record is gone.
        Waiter* oldest = waiters_.front();
        waiters_.pop_front();
        oldest->granted = id;
        oldest->wake.notify_one();
    }
    publish_locked();
}

void Pool::publish_locked() {
    idle_ = static_cast<int>(free_.size());
    active_ = size_ - static_cast<int>(free_.size());
    waiting_ = static_cast<int>(waiters_.size());
}

PoolStats Pool::stats() const {
    PoolStats stats;
    stats.size = size_;
    stats.active = active_.load();
    stats.idle = idle_.load();
    stats.waiting = waiting_.load();
    return stats;
}

// ---- do not change: the Lease gives its resource back exactly once ----

Pool::Lease Pool::borrow() {
    return borrow(checkout_timeout_);
}

Pool::Lease::Lease(Lease&& other) noexcept : pool_(other.pool_), id_(other.id_) {
    other.pool_ = nullptr;
}

Pool::Lease& Pool::Lease::operator=(Lease&& other) noexcept {
    if (this != &other) {
        release();
        pool_ = other.pool_;
        id_ = other.id_;
        other.pool_ = nullptr;
    }
    return *this;
}

Pool::Lease::~Lease() {
    release();
}

void Pool::Lease::release() {
    if (pool_ == nullptr) return;
    Pool* pool = pool_;
    pool_ = nullptr;
    pool->give_back(id_);
}
