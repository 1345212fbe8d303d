// The connector: the part of a server that owns the sockets.
//
//   acceptor fiber (carrier 0) --accept--> connection fibers, spread round-robin over carriers
//
// One fiber per connection, for the connection's whole life: it waits for the next request
// (the keep-alive wait), reads and checks the request head, hands the request to the executor,
// and writes the response. Every one of those waits parks the fiber, never the carrier thread,
// so an idle kept-alive connection costs a parked fiber (a few KiB) and no thread.
//
// Limits, and what happens at each:
//  * max_connections: the server never holds more sockets than this. At the limit the acceptor
//    stops calling accept(); new connections wait in the kernel's accept queue (up to
//    accept_count), and beyond that the kernel drops their SYNs and the clients retry. While one
//    waits there, the kept-alive connection idle longest gives way to it (fair admission,
//    idle_connections.hpp): closed in its keep-alive wait, never in the middle of a request.
//  * keep_alive_timeout: an idle connection with no next request within it is closed.
//  * read_timeout: a request head that does not arrive completely within it is answered
//    408 and closed, so half-sent requests cannot hold connections forever. For a connection's
//    first request it counts from the accept: a client that sends nothing is closed after it.
//  * write_timeout: a client that takes none of its response for this long is disconnected.
//  * keep_alive_requests: after this many requests the response says "Connection: close",
//    and the connection ends politely: requests the client pipelined behind it are drained
//    unanswered (briefly), so that a reset cannot destroy answers already sent.
//  * accept() failing for want of descriptors or memory: the acceptor says so once on stderr
//    and tries again every 100 ms, rather than spin its carrier.
#pragma once

#include "lessons/02-fibers/carrier.hpp"
#include "lessons/03-connector/guard/request_guard.hpp"
#include "lessons/03-connector/http_app.hpp"
#include "lessons/03-connector/idle_connections.hpp"
#include "lessons/03-connector/reactor.hpp"

#include <array>
#include <atomic>
#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/mutex.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

class FiberStream;

struct ConnectorOptions {
    std::string host = "127.0.0.1";
    int port = 8080;                      // 0 picks a free port
    int carriers = 0;                     // 0: one per core
    std::string carrier_name = "carrier"; // the carriers' thread names: carrier-0, carrier-1, ...
    int max_connections = 8192;
    int accept_count = 100;
    int keep_alive_requests = 100;
    std::chrono::milliseconds keep_alive_timeout{5000};
    std::chrono::milliseconds read_timeout{5000};
    std::chrono::milliseconds write_timeout{5000};
    // Requests still running this long after stop() are abandoned (see stop()).
    std::chrono::milliseconds stop_grace{5000};
    // Each connection fiber's stack. The guard keeps requests small enough for it (see
    // request_guard.hpp); untouched pages cost no memory, so this is address space, not RAM.
    std::size_t fiber_stack_size = 256 * 1024;
    GuardLimits limits;
    // What a --trace calls this connector's count of open connections: a string literal.
    const char* connections_counter = "connections";
};

class Connector {
public:
    // How a request whose head has arrived gets served. `serve` parses it, runs the handler and
    // writes the response; it returns false when the connection must close. The default calls
    // it right here, on the connection's fiber. Lesson 05's platform executor hands it to a
    // pool of OS threads instead and parks the fiber until a thread has run it. An exception out
    // of the executor closes that connection only (its carrier reports it on stderr).
    using Executor = std::function<bool(const std::function<bool()>& serve)>;

    Connector(HttpApp& app, ConnectorOptions options, Executor executor = {});
    // Stops the connector if stop() has not. After a stop() that returned false it waits for the
    // requests still running, however long they take: their fibers use this Connector, the app
    // and the executor, so none of them may die first. A program that cannot wait ends the
    // process instead, as run_until_shutdown does.
    ~Connector();
    Connector(const Connector&) = delete;
    Connector& operator=(const Connector&) = delete;

    // Binds and listens, then starts the carriers and the acceptor. Throws std::runtime_error
    // ("cannot listen on 127.0.0.1:8080: Address already in use") when it cannot listen.
    void start();
    int port() const { return port_; }
    const ConnectorOptions& options() const { return options_; }

    // Connections accepted and not yet closed.
    int open_connections() const { return open_.load(std::memory_order_relaxed); }

    // Kept-alive connections closed so far to make room for a newcomer at max_connections.
    std::uint64_t idle_evictions() const { return idle_evictions_.load(std::memory_order_relaxed); }
    // Idle kept-alive connections asked so far to give back their stack pages (after a second).
    std::uint64_t idle_lightened() const { return idle_ ? idle_->lightened() : 0; }

    // The requests the connector answered itself, refusing them before the app saw them (400,
    // 408, 413, 431 ...): how many of each status so far, statuses never refused left out.
    std::vector<std::pair<int, std::uint64_t>> refusals() const;

    // Stops accepting, closes idle connections, and lets requests in progress finish (their
    // responses say "Connection: close"). Returns true when everything ended within stop_grace;
    // false when requests are still running, in which case the carriers are left running and
    // the caller should end the process without waiting for them (or call stop() again, which
    // waits another stop_grace). Call it from one thread at a time.
    bool stop();
    // The same, giving up at `give_up_at` instead of after stop_grace.
    bool stop(Deadline give_up_at);
    // The first half of stop(), which returns at once: stops accepting and closes idle
    // connections. For stopping several connectors together (run_until_shutdown).
    void begin_stop();

private:
    struct ConnectionLease;

    void accept_loop(int listen_fd);
    void wait_for_room(Watch& listener);
    void time_out_idle_connections(std::size_t carrier);
    void wake_timer(std::size_t carrier);
    void serve_connection(int fd, std::size_t carrier);
    bool read_checked_head(FiberStream& stream, Deadline deadline,
                           std::optional<Refusal>& refusal) const;
    void connection_closed();
    void wake_acceptor();
    static std::size_t refusal_slot(int status);
    void join_carriers();

    HttpApp& app_;
    ConnectorOptions options_;
    Executor executor_;
    int port_ = 0;
    int listen_fd_ = -1;
    std::atomic<bool> stopping_{false};

    std::atomic<int> open_{0};
    // Refusals by status: slot i counts status 400 + i (every refusal is a 4xx).
    std::array<std::atomic<std::uint64_t>, 100> refused_{};
    // The acceptor parks here while max_connections are open and a newcomer waits: closing
    // connections notify it, and so do connections falling idle while no idle one was there.
    boost::fibers::mutex slot_mutex_;
    boost::fibers::condition_variable slot_freed_;
    std::atomic<bool> waiting_for_idle_{false};
    // Fair admission at the limit: the connections in their keep-alive wait, by carrier.
    std::unique_ptr<IdleConnections> idle_;
    std::atomic<std::uint64_t> idle_evictions_{0};
    // Each carrier's keep-alive timer (time_out_idle_connections) sleeps on its own; stop()
    // wakes them all, and so does, on its carrier, a connection that falls idle while the timer
    // sleeps with nobody left to lighten.
    struct KeepAliveTimer {
        boost::fibers::mutex mutex;
        boost::fibers::condition_variable wake;
        bool waiting_for_idle = false; // touched only on its carrier
    };
    std::vector<std::unique_ptr<KeepAliveTimer>> timers_;
    // Open sockets per carrier, touched only by that carrier's fibers: stop() sends each carrier
    // a fiber that shuts its idle connections down.
    std::vector<std::unordered_set<int>> sockets_by_carrier_;
    // stop() waits here (on a plain thread) for the last connection to close.
    std::mutex drained_mutex_;
    std::condition_variable drained_;
    // Last, so destroyed first: the carriers join their fibers while everything above, which
    // those fibers use, is still alive.
    std::vector<std::unique_ptr<Carrier>> carriers_;
};

// Starts the connector (or prints why it cannot and exits 1), prints "listening on ...", waits
// for SIGINT or SIGTERM, stops the connector and `companions` (started by the caller: the
// management port) together, and returns. Requests still running after the connector's grace
// period are abandoned: the process exits 0 without waiting for them.
void run_until_shutdown(Connector& connector, const std::string& program,
                        const std::vector<Connector*>& companions = {});
