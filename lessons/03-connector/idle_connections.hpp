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
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
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
        Waiting(IdleConnections& list, std::size_t carrier, int fd);
        ~Waiting() { end(); }
        Waiting(const Waiting&) = delete;
        Waiting& operator=(const Waiting&) = delete;
        // Leaves the list. True when a newcomer took this connection's place meanwhile: its read
        // side is shut, and the connection must close (after the request that raced in, if one
        // did).
        bool end();

    private:
        friend class IdleConnections;
        IdleConnections& list_;
        std::size_t carrier_;
        int fd_;
        std::chrono::steady_clock::time_point since_;
        Waiting* older_ = nullptr; // the list, oldest first
        Waiting* newer_ = nullptr;
        bool listed_ = true;
        bool evicted_ = false;
    };

    // From any thread (the acceptor): shuts down the read side of the connection that has waited
    // longest, across the carriers, so that it closes; false when none is waiting.
    bool evict_longest_idle();
    // Whether any connection is in its keep-alive wait now.
    bool any() const;

private:
    // One carrier's connections in their keep-alive wait, oldest first.
    struct List {
        mutable std::mutex mutex; // held for a few pointer moves, never across a wait
        Waiting* oldest = nullptr;
        Waiting* newest = nullptr;
    };
    static void unlink(List& list, Waiting& waiting);

    std::vector<std::unique_ptr<List>> lists_; // by carrier
};
