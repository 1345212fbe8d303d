// A fixed-size pool of PostgreSQL connections: the bounded resource every request of /work needs.
//
//   PgPool pool(options);               // size 10, checkout timeout 30 s by default
//   pool.open();                        // opens all 10 now; throws PgError if the server is down
//   PgPool::Lease lease = pool.borrow(); // waits up to the checkout timeout for a free connection
//   lease->query("SELECT 1", ...);      // the connection is ours until `lease` goes out of scope
//
// The pool never holds more than `size` connections. With all of them lent out, borrow() waits:
// a fiber parks (its carrier runs other fibers meanwhile), a plain OS thread blocks. That queue
// of waiters is where the work piles up once requests arrive faster than size / query time:
// 10 connections that each take 50 ms serve at most 200 queries a second, however many wait.
//
// Who gets a returned connection:
//  * FIFO (the default): the waiter that has waited longest. The returning borrower hands the
//    connection straight to it, so a newcomer cannot take it first.
//  * barging (HikariCP's way): the connection becomes idle and the oldest waiter is woken, but
//    until that waiter runs, anyone arriving may take it. Cheaper, unfair: a waiter can be
//    overtaken again and again, and the slowest checkouts get slower.
// A waiter whose timeout passes leaves the queue with PoolTimeout, worded like HikariCP's.
//
// Broken connections: a connection is checked before it is handed out (alive(): reads what the
// server sent, without waiting and without a round trip) and when it comes back; a dead one is
// closed and its place is filled by a fresh connection, opened by the borrower that gets the place.
// When PostgreSQL is down, that connect fails at once (connection refused) and borrow() throws
// PgError: requests fail fast instead of waiting out the timeout; when it is back they succeed
// again.
//
// Thread safety: everything may be called from fibers on any carrier and from plain threads at
// once. The bookkeeping sits behind a std::mutex, held for a few list operations and never
// while waiting; each waiter waits on its own boost::fibers::condition_variable_any, which parks
// a fiber and blocks a thread, and works across threads. The counters (stats()) are atomics,
// readable without a lock, so a metrics endpoint never queues behind the pool.
#pragma once

#include "lessons/04-pool/pg_connection.hpp"

#include <atomic>
#include <boost/fiber/condition_variable.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

struct PoolOptions {
    // libpq connection string; "" means libpq's environment (PGHOST, PGPORT, PGUSER, ...).
    std::string conninfo;
    // At most this many connections, ever; the server's max_connections must leave room.
    int size = 10;
    // How long borrow() waits for a connection before it gives up with PoolTimeout. 30 s is
    // HikariCP's default connectionTimeout: long enough that a request waits out any burst
    // a healthy pool can absorb, and the line the late 500s of lesson 05 cluster at.
    std::chrono::milliseconds checkout_timeout{30000};
    // false: first come, first served; true: barging (see above).
    bool barging = false;
    // Opening one connection takes a few milliseconds on loopback. A server that has not
    // finished the handshake within this (or within what is left of the borrower's checkout
    // timeout, if that is sooner) is treated as down: the borrower gets PgError.
    std::chrono::milliseconds connect_timeout{5000};
};

// A snapshot of the counters; each is read atomically, the set is not one instant.
struct PoolStats {
    int size = 0;    // the configured maximum
    int active = 0;  // connections lent out (including one being opened for its borrower)
    int idle = 0;    // open connections waiting in the pool
    int total = 0;   // active + idle: what the pool holds now, never more than size
    int pending = 0; // borrowers waiting for a connection
    std::uint64_t timeouts = 0; // borrow() calls that gave up (PoolTimeout) so far
};

// Thrown by borrow() when no connection became free in time. The message reads like HikariCP's:
// "Connection is not available, request timed out after 30000ms (total=10, active=10, idle=0,
// waiting=N)": the configured timeout, and the pool's state as this borrower leaves it
// (waiting counts the borrowers still queued behind it).
class PoolTimeout : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class PgPool {
    struct Slot; // one place in the pool: a connection, or room for one

public:
    // The right to use one connection, returned to the pool when the Lease is destroyed.
    class Lease {
    public:
        Lease(Lease&& other) noexcept;
        Lease& operator=(Lease&& other) noexcept;
        ~Lease();
        PgConnection& operator*() const;
        PgConnection* operator->() const { return &**this; }
        // Gives the connection back now (the destructor does this too).
        void release();

    private:
        friend class PgPool;
        Lease(PgPool* pool, Slot* slot) : pool_(pool), slot_(slot) {}
        PgPool* pool_ = nullptr;
        Slot* slot_ = nullptr;
    };

    explicit PgPool(PoolOptions options);
    // Closes the connections. Every Lease must have been released first.
    ~PgPool();
    PgPool(const PgPool&) = delete;
    PgPool& operator=(const PgPool&) = delete;

    // Opens every connection now, so the first requests do not pay for it and a wrong
    // connection string or a stopped server shows at start-up. Each connect may take the
    // connect timeout. Throws PgError.
    void open();

    // A connection within the checkout timeout (or `timeout`), else PoolTimeout. PgError when
    // a fresh connection has to be opened and the server cannot be reached in the time left.
    // Either way borrow() returns or throws within the timeout, the connect included.
    Lease borrow();
    Lease borrow(std::chrono::milliseconds timeout);

    PoolStats stats() const;
    const PoolOptions& options() const { return options_; }

private:
    struct Waiter;
    Slot* take(std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds timeout);
    void give_back(Slot* slot);
    // Runs outside the lock: may connect, but not past `deadline`.
    void make_ready(Slot& slot, std::chrono::steady_clock::time_point deadline);
    void publish_locked();
    [[noreturn]] void time_out_locked(std::list<Waiter*>::iterator me,
                                      std::chrono::milliseconds timeout);

    const PoolOptions options_;
    std::vector<std::unique_ptr<Slot>> slots_;

    // Guards everything below, up to the counters. A std::mutex, not a boost::fibers::mutex:
    // OS threads waiting for Boost's fiber mutex spin on its internal spinlock (lesson 05 tells
    // the story); here a waiting thread sleeps in the kernel, and a fiber that finds it taken
    // holds its carrier for a few list operations only.
    std::mutex mutex_;
    std::deque<Slot*> free_;     // slots nobody holds: open connections first, empty places last
    std::list<Waiter*> waiters_; // oldest first
    int lent_ = 0;

    std::atomic<int> active_{0};
    std::atomic<int> idle_{0};
    std::atomic<int> pending_{0};
    std::atomic<std::uint64_t> timeouts_{0};
};
