#include "pool.hpp"

Pool::Pool(int size, std::chrono::milliseconds checkout_timeout)
    : size_(size), checkout_timeout_(checkout_timeout) {
    if (size < 1) throw std::invalid_argument("a pool needs at least one resource");
    // TODO(ex3) task 1: put the resources 0..size-1 in the pool, free.
}

Pool::Pool(int size, std::chrono::milliseconds checkout_timeout, Handover handover)
    : Pool(size, checkout_timeout) {
    // TODO(ex3) task 5 (stretch): under Handover::barging, give_back() frees the resource and
    // wakes a waiter; whoever asks first gets it.
    handover_ = handover;
}

Pool::Lease Pool::borrow(std::chrono::milliseconds timeout) {
    // TODO(ex3) task 1: lend a free resource: return Lease(this, id).
    // TODO(ex3) task 2: none free? Wait for one, up to `timeout`, then throw PoolTimeout.
    // TODO(ex3) task 3: waiters are served first come, first served.
    (void)timeout;
    throw std::logic_error("TODO(ex3) task 1: Pool::borrow is not written yet");
}

void Pool::give_back(int id) {
    // TODO(ex3) task 1: the resource is free again...
    // TODO(ex3) task 3: ...unless someone waits for it: then it is theirs.
    (void)id;
}

PoolStats Pool::stats() const {
    // TODO(ex3) task 4: count what is lent, what is free, who waits.
    PoolStats stats;
    stats.size = size_;
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
