// Exercise 03: pool checkout with a timeout, first come first served.
//
// Lesson 04 puts ten PostgreSQL connections in a pool; every request of /work borrows one. When
// all ten are lent out, borrowers wait — and that queue of waiters is where the work piles up
// once requests arrive faster than the pool serves them. Here you write the pool's heart for
// any kind of resource: resources are just numbers 0..size-1, so the tests need no database.
#pragma once

#include <atomic>
#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/mutex.hpp>
#include <chrono>
#include <deque>
#include <list>
#include <stdexcept>

// ---- do not change: the graded tests use these declarations ----

// Thrown by borrow() when no resource became free in time. Its message reads like HikariCP's:
// "Resource is not available, request timed out after 200ms (total=1, active=1, idle=0,
// waiting=0)": the timeout, then the pool's state as this borrower leaves it (waiting counts
// the borrowers still queued behind it).
class PoolTimeout : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A snapshot of the pool, for a metrics endpoint.
struct PoolStats {
    int size = 0;    // resources in the pool, lent or not
    int active = 0;  // lent out
    int idle = 0;    // waiting in the pool to be lent
    int waiting = 0; // borrowers waiting for a resource
};

class Pool {
public:
    // The right to use one resource, given back to the pool when the Lease ends (or release()).
    class Lease {
    public:
        Lease(Lease&& other) noexcept;
        Lease& operator=(Lease&& other) noexcept;
        ~Lease();
        Lease(const Lease&) = delete;
        Lease& operator=(const Lease&) = delete;

        int id() const { return id_; } // which resource: 0..size-1
        void release();                // gives it back now

    private:
        friend class Pool;
        Lease(Pool* pool, int id) : pool_(pool), id_(id) {}
        Pool* pool_ = nullptr;
        int id_ = -1;
    };

    // A pool of `size` resources (at least 1); borrow() waits up to `checkout_timeout`.
    Pool(int size, std::chrono::milliseconds checkout_timeout);
    // Task 5 (stretch). How a returned resource finds its next borrower: fifo (tasks 1-4) hands
    // it to the longest waiter; barging makes it free and wakes a waiter, and whoever asks
    // first gets it, also a newcomer or the one who returned it.
    enum class Handover { fifo, barging };
    Pool(int size, std::chrono::milliseconds checkout_timeout, Handover handover);
    Pool(const Pool&) = delete;
    Pool& operator=(const Pool&) = delete;

    // A free resource at once, or the first one returned while this borrower is the longest
    // waiting, within the timeout; PoolTimeout otherwise. A waiting fiber parks (its carrier
    // runs other fibers); a waiting plain thread blocks. Safe from fibers on any carrier and
    // from plain threads at once.
    Lease borrow();
    Lease borrow(std::chrono::milliseconds timeout);

    // Safe to call at any time from anywhere, also while others wait.
    PoolStats stats() const;

    // ---- end of do not change ----
private:
    void give_back(int id); // the Lease calls it

    // A borrower waiting for a resource. Each has its own condition variable, so a returned
    // resource wakes exactly the waiter it is handed to.
    struct Waiter {
        boost::fibers::condition_variable wake;
        int granted = -1; // the resource handed to this waiter by give_back()
    };

    void publish_locked(); // copies the state into the counters stats() reads

    const int size_;
    const std::chrono::milliseconds checkout_timeout_;
    Handover handover_ = Handover::fifo;

    // Fiber primitives: a fiber that waits for them parks; a plain thread blocks. They work
    // across carriers and threads.
    boost::fibers::mutex mutex_; // guards free_ and waiters_
    std::deque<int> free_;       // resources nobody holds
    std::list<Waiter*> waiters_; // oldest first; each record lives on its waiter's stack

    // What stats() reports, readable without the lock: a metrics endpoint must never queue
    // behind the borrowers.
    std::atomic<int> active_{0};
    std::atomic<int> idle_{0};
    std::atomic<int> waiting_{0};
};
