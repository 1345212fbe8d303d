// Fair admission at the limit: the rule "the connection idle longest gives way".
//
// At max_connections the connector holds no more sockets, and a newcomer waits in the kernel's
// accept queue. Without this rule it waited for a connection to close, and a connection that
// sends a request every second or two never closes: 1,100 such clients (issue 38) kept a scraper
// out of a 1,024-connection port for good, though each sat idle nearly all the time. So:
//
//   when a newcomer waits in the accept queue and max_connections are open, the connector closes
//   the kept-alive connection that has waited longest for its next request, and accepts the
//   newcomer in its place.
//
// Only a connection in its keep-alive wait is a candidate: one that has been answered at least
// once and has not sent a byte of its next request (none in the kernel either, where they wait
// while its carrier is busy: the acceptor peeks). A request in progress is never cut, and
// neither is a new connection before its first request (it has read_timeout to send it). When no
// connection is idle, the newcomer waits as before, for one to close or to fall idle. nginx does
// the same when it runs out of connections: it closes "reusable" (idle keep-alive) connections,
// oldest first, and logs "worker_connections are not enough, reusing connections". Tomcat does
// not: at maxConnections it stops accepting until a connection closes.
//
// The list is kept per carrier, oldest wait first, because each connection joins and leaves it
// twice a request: its own carrier's mutex is one nobody else takes, except the acceptor looking
// for the oldest, and only while a newcomer waits at the limit. The acceptor (carrier 0) never
// closes another carrier's socket: it shuts the read side down (shutdown(SHUT_RD)) while the
// entry is still listed, under that carrier's mutex, so the descriptor cannot have been closed
// and reused meanwhile. The connection's own fiber, woken on its own carrier by the end of
// stream, sees it is evicted and closes its socket itself, as stop() makes idle connections do.
//
// The same list enforces the keep-alive timeout. Every wait is given the same span, so waits fall
// due in the order they began, oldest first: a queue, not a tree. A timer per wait in Boost.Fiber's
// sleep queue (a tree ordered by time) cost every request an insert and an erase among hundreds of
// other fibers' entries (at 200 connections, 2-3 % of the connector's profile, and more in cache
// misses). Instead one fiber per carrier sleeps until its oldest wait falls due and shuts that
// connection's read side, as eviction does (Connector::time_out_idle_connections).
//
// And the same fiber lightens connections that stay idle: a second into its wait, a connection's
// fiber is asked to give back the stack pages its last request touched (lighten_idle_before), so
// that an idle kept-alive connection holds about one page of stack instead of three.
#pragma once

#include "lessons/03-connector/fiber_socket.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

class IdleConnections {
public:
    explicit IdleConnections(std::size_t carriers);
    IdleConnections(const IdleConnections&) = delete;
    IdleConnections& operator=(const IdleConnections&) = delete;

    // A connection in its keep-alive wait, for as long as this guard lives (on the connection's
    // fiber, its carrier's index). Listed at construction, unlisted at the end or destruction.
    class Waiting {
    public:
        Waiting(IdleConnections& list, std::size_t carrier, FiberSocket& socket);
        ~Waiting() { end(); }
        Waiting(const Waiting&) = delete;
        Waiting& operator=(const Waiting&) = delete;
        // Leaves the list. True when its read side was shut meanwhile (a newcomer took its place,
        // or its keep-alive timeout passed): the connection must close (after the request that
        // raced in, if one did).
        bool end();
        // Whether the keep-alive timer has asked this connection to lighten (for tests).
        bool lightened() const { return lightened_; }

    private:
        friend class IdleConnections;
        IdleConnections& list_;
        std::size_t carrier_;
        FiberSocket& socket_;
        std::chrono::steady_clock::time_point since_;
        Waiting* older_ = nullptr; // the list, oldest first
        Waiting* newer_ = nullptr;
        bool listed_ = true;
        bool shut_ = false;
        bool lightened_ = false;
    };

    // From any thread (the acceptor): shuts down the read side of the connection that has waited
    // longest, across the carriers, so that it closes; false when none is waiting.
    bool evict_longest_idle();
    // Whether any connection is in its keep-alive wait now.
    bool any() const;

    // The keep-alive timeout, for one carrier's list (call it on that carrier): shuts down the
    // read side of each connection whose wait began before `cutoff`, so that it closes. Returns
    // when the oldest wait left began, or nullopt when none is left.
    std::optional<std::chrono::steady_clock::time_point>
    close_idle_before(std::size_t carrier, std::chrono::steady_clock::time_point cutoff);
    // Asks each connection of one carrier whose wait began before `cutoff` (once per wait) to
    // give back its idle stack pages (FiberSocket::lighten_reader). Call it on that carrier.
    // Returns when the oldest wait not yet lightened began, or nullopt when every one is.
    std::optional<std::chrono::steady_clock::time_point>
    lighten_idle_before(std::size_t carrier, std::chrono::steady_clock::time_point cutoff);
    // How many connections have been asked to lighten so far, on every carrier.
    std::uint64_t lightened() const { return lightened_.load(std::memory_order_relaxed); }

private:
    // One carrier's connections in their keep-alive wait, oldest first.
    struct List {
        mutable std::mutex mutex; // held for a few pointer moves, never across a wait
        Waiting* oldest = nullptr;
        Waiting* newest = nullptr;
        // The lightened ones are the oldest: this one and every older one. Where the next walk
        // starts, so that no walk passes the same connection twice.
        Waiting* newest_lightened = nullptr;
    };
    static void unlink(List& list, Waiting& waiting);
    static bool shut_if_idle(List& list, Waiting& waiting);

    std::vector<std::unique_ptr<List>> lists_; // by carrier
    std::atomic<std::uint64_t> lightened_{0};
};
