#include "lessons/04-pool/pg_pool.hpp"

#include "lessons/common/tracing.hpp"

#include <algorithm>
#include <mutex>
#include <optional>

// One place in the pool. `connection` is null until the place is first used, and again after
// a broken connection was closed; the borrower who gets such a place opens a new connection.
struct PgPool::Slot {
    std::unique_ptr<PgConnection> connection;
    int index = 0;                   // its place in slots_, as a trace names it
    std::optional<TraceWait> holder; // "pool.hold" in a --trace, while lent
};

// A borrower waiting for a connection: a record in the queue, with its own condition variable
// so that a returned connection wakes exactly one waiter, the one it is meant for (a shared
// condition variable would wake them all, or an arbitrary one).
struct PgPool::Waiter {
    boost::fibers::condition_variable_any wake; // works with the pool's std::mutex
    Slot* granted = nullptr;                    // FIFO: the place handed to this waiter
    bool signalled = false;                     // barging: "a connection was returned, try again"
};

PgPool::PgPool(PoolOptions options) : options_(std::move(options)) {
    if (options_.size < 1) throw std::invalid_argument("the pool size must be at least 1");
    for (int i = 0; i < options_.size; ++i) {
        slots_.push_back(std::make_unique<Slot>());
        slots_.back()->index = i;
        free_.push_back(slots_.back().get());
    }
    publish_locked();
}

PgPool::~PgPool() = default;

void PgPool::open() {
    // Nobody waits at start-up but the program: each connect gets the whole connect timeout,
    // however short the checkout timeout is.
    std::vector<Lease> leases;
    for (int i = 0; i < options_.size; ++i)
        leases.push_back(borrow(options_.connect_timeout));
}

PgPool::Lease PgPool::borrow() {
    return borrow(options_.checkout_timeout);
}

PgPool::Lease PgPool::borrow(std::chrono::milliseconds timeout) {
    // One deadline for the whole checkout, the wait for a place and the connect after it: a
    // borrower never waits longer than `timeout`, however slow the server is to answer.
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    Lease lease(this, take(deadline, timeout));
    // Outside the lock: checking or opening a connection waits for the network. Should the
    // connect fail, the lease returns the empty place on its way out.
    make_ready(*lease.slot_, deadline);
    lease.slot_->holder.emplace("pool.hold");
    lease.slot_->holder->arg("connection", lease.slot_->index);
    return lease;
}

PgPool::Slot* PgPool::take(std::chrono::steady_clock::time_point deadline,
                           std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto take_free = [&] {
        Slot* slot = free_.front();
        free_.pop_front();
        ++lent_;
        publish_locked();
        return slot;
    };
    // A free place is anyone's. In FIFO order there is none while borrowers wait: give_back()
    // hands a returned connection straight to the oldest waiter. When barging, the connection
    // becomes free, and a newcomer may take it before the woken waiter runs.
    if (!free_.empty()) return take_free();

    Waiter me;
    const auto my_place = waiters_.insert(waiters_.end(), &me);
    publish_locked();
    TraceWait waiting("pool.borrow"); // in a --trace, with its outcome
    waiting.arg("outcome", "ok");
    for (;;) {
        // The predicate form: Boost 1.74's wait_until can report a timeout after a notify.
        const bool woken = me.wake.wait_until(
            lock, deadline, [&] { return me.granted != nullptr || me.signalled; });
        if (me.granted != nullptr) return me.granted; // the giver dequeued us and counted it
        if (me.signalled) {
            me.signalled = false;
            if (!free_.empty()) {
                waiters_.erase(my_place);
                return take_free();
            }
            continue; // a newcomer barged in first: wait for the next one
        }
        if (woken) continue;
        waiting.arg("outcome", "timeout");
        time_out_locked(my_place, timeout);
    }
}

void PgPool::time_out_locked(std::list<Waiter*>::iterator me, std::chrono::milliseconds timeout) {
    waiters_.erase(me);
    timeouts_.fetch_add(1, std::memory_order_relaxed);
    publish_locked();
    const int idle = idle_.load(std::memory_order_relaxed);
    throw PoolTimeout(
        "Connection is not available, request timed out after " + std::to_string(timeout.count()) +
        "ms (total=" + std::to_string(lent_ + idle) + ", active=" + std::to_string(lent_) +
        ", idle=" + std::to_string(idle) + ", waiting=" + std::to_string(waiters_.size()) + ")");
}

void PgPool::make_ready(Slot& slot, std::chrono::steady_clock::time_point deadline) {
    if (slot.connection && !slot.connection->alive()) slot.connection.reset(); // died while idle
    if (slot.connection) return;
    // The connect timeout, or what is left of the borrower's checkout timeout if that is less.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    slot.connection = std::make_unique<PgConnection>(
        options_.conninfo,
        std::clamp(left, std::chrono::milliseconds(0), options_.connect_timeout));
}

void PgPool::give_back(Slot* slot) {
    // A connection that broke while lent (or was left inside a transaction) is closed here,
    // outside the lock; its place goes back empty, to be refilled by whoever gets it.
    if (slot->connection && !slot->connection->alive()) slot->connection.reset();
    slot->holder.reset(); // ends its "pool.hold"

    std::lock_guard<std::mutex> lock(mutex_);
    if (!options_.barging && !waiters_.empty()) {
        // FIFO: straight to the oldest waiter; the place never becomes free, so nobody can
        // overtake. Notified under the lock: the waiter's record lives until it has the lock.
        Waiter* oldest = waiters_.front();
        waiters_.pop_front();
        oldest->granted = slot;
        oldest->wake.notify_one();
        publish_locked();
        return;
    }
    if (slot->connection) {
        free_.push_front(slot); // a warm connection first
    } else {
        free_.push_back(slot);
    }
    --lent_;
    // Barging: wake the oldest waiter not already woken; it still has to win the race.
    for (Waiter* waiter : waiters_) {
        if (waiter->signalled) continue;
        waiter->signalled = true;
        waiter->wake.notify_one();
        break;
    }
    publish_locked();
}

void PgPool::publish_locked() {
    int idle = 0;
    for (const Slot* slot : free_)
        idle += slot->connection ? 1 : 0;
    active_.store(lent_, std::memory_order_relaxed);
    idle_.store(idle, std::memory_order_relaxed);
    pending_.store(static_cast<int>(waiters_.size()), std::memory_order_relaxed);
    trace_counter("pool", "active", lent_, "pending", static_cast<std::int64_t>(waiters_.size()));
}

PoolStats PgPool::stats() const {
    PoolStats stats;
    stats.size = options_.size;
    stats.active = active_.load(std::memory_order_relaxed);
    stats.idle = idle_.load(std::memory_order_relaxed);
    stats.total = stats.active + stats.idle;
    stats.pending = pending_.load(std::memory_order_relaxed);
    stats.timeouts = timeouts_.load(std::memory_order_relaxed);
    return stats;
}

PgPool::Lease::Lease(Lease&& other) noexcept : pool_(other.pool_), slot_(other.slot_) {
    other.slot_ = nullptr;
}

PgPool::Lease& PgPool::Lease::operator=(Lease&& other) noexcept {
    if (this != &other) {
        release();
        pool_ = other.pool_;
        slot_ = other.slot_;
        other.slot_ = nullptr;
    }
    return *this;
}

PgPool::Lease::~Lease() {
    release();
}

void PgPool::Lease::release() {
    if (slot_ == nullptr) return;
    Slot* slot = slot_;
    slot_ = nullptr;
    pool_->give_back(slot);
}

PgConnection& PgPool::Lease::operator*() const {
    if (slot_ == nullptr) throw std::logic_error("this lease was already released");
    return *slot_->connection;
}
