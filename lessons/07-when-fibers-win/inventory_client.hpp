// The downstream call of GET /orders/{id}: one GET to the "inventory" service on a kept-alive
// connection, through the course's fiber-aware HTTP client (lessons/instruments/client/).
//
//   InventoryClient inventory("http://127.0.0.1:8090/benchmark", std::chrono::seconds(5));
//   HttpResponse answer;
//   std::string why;
//   if (!inventory.get(answer, why)) ...   // why: "inventory at http://...: connection refused"
//
// Why kept connections: a connect per call would add a handshake and a socket in TIME_WAIT to
// every request; at thousands of requests a second that is the client's cost, not the wait's.
// Idle connections are kept per carrier (Reactor::current()): a connection serves the fibers of
// the carrier that opened it, and the platform threads (no reactor) share theirs, which wait in
// poll() anyway. While it sits idle a kept connection is off its carrier's reactor
// (HttpClientConnection::set_aside), so that the reaper below may close it from its own thread.
//
// A kept connection is a descriptor. The server closes it after its own keep-alive timeout, and
// until the client closes its end too the socket waits in CLOSE-WAIT, held for nothing (issue 26:
// a burst of 300 orders left 298 so, when idle connections were kept without limit and only the
// newest was ever looked at). So the kept ones are bounded and short-lived (IdleLimits), and a
// reaper thread closes each one once it has idled past the timeout, whether or not another call
// comes (issue 38: after a burst and then silence, 267-300 sockets sat in CLOSE-WAIT for 30 s and
// more, each waiting for the next call on its carrier).
//
// And an answer is memory. Each call reads at most what the inventory really sends, with room to
// spare (ResponseCaps), and all calls together at most a memory budget: a call whose answer would
// pass it fails there and then, and the order is a 502 at once (issue 38: 1,000 orders against
// an inventory that sent almost 1 MiB each and stalled took the server from 14 MB to 369 MB).
#pragma once

#include "lessons/instruments/client/http_client.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

struct IdleLimits {
    // Connections kept idle per carrier at most; past it the least recently used one is
    // closed. Above what one carrier has in flight at lesson 07's checkpoint (2,000 workers on
    // two carriers, or 200 platform threads sharing one list), so that a busy client keeps what
    // it reuses instead of closing and reopening connections; low enough that a burst cannot
    // leave thousands of idle descriptors behind.
    std::size_t max_per_carrier = 1024;
    // A connection idle this long is closed, by the reaper's timer. Below the 5 s keep-alive
    // timeout of lesson 03 (and of Node.js and Apache), so the client closes first and never
    // sends on a connection the server is closing; not far below, because connections used
    // only at the peaks of a busy run would be closed and opened again, a connect each.
    std::chrono::milliseconds timeout{4000};
};

// What the calls may buffer. The inventory is lesson 03's GET /benchmark: a head of 104 bytes and
// a body of 109 (`--benchmark-sleep 100ms`; 1-2 more for a longer sleep or thread id).
struct ResponseCaps {
    // One answer's head, and its body, at most: about ten times what the inventory sends. A
    // larger one fails its call as soon as its head says so (or, for the head, at 1 KiB).
    std::size_t max_head_bytes = 1024;
    std::size_t max_body_bytes = 1024;
    // Bytes all calls together hold at once, at most: the inventory client's memory budget.
    // 4 MiB holds about 19,700 of the inventory's 213-byte answers at once, ten times lesson 07's
    // 2,000 concurrent orders, so honest answers never meet it; and 2,048 calls' worth at the
    // caps above. A call whose answer would pass it fails at once (a 502), however many wait.
    std::size_t memory_budget_bytes = 4u << 20;
};

class InventoryClient {
public:
    // Throws std::invalid_argument when `url` is not http://IPv4:PORT/path.
    InventoryClient(const std::string& url, std::chrono::milliseconds timeout, IdleLimits idle = {},
                    ResponseCaps caps = {});
    // Stops the reaper and closes the idle connections.
    ~InventoryClient();
    InventoryClient(const InventoryClient&) = delete;
    InventoryClient& operator=(const InventoryClient&) = delete;

    // GETs the URL within the timeout. False, with `why` in one line, when it could not.
    // Waits as lesson 03's sockets wait: a fiber parks, a plain thread blocks.
    bool get(HttpResponse& response, std::string& why);

    const std::string& url() const { return url_; }
    // Bytes the calls in progress hold of the memory budget now, and the calls it turned away.
    std::size_t buffered_bytes() const { return budget_.in_use(); }
    std::uint64_t over_budget() const { return budget_.refusals(); }

private:
    using Connection = std::unique_ptr<HttpClientConnection>;
    struct Idle {
        Connection connection;
        std::chrono::steady_clock::time_point since;
    };
    Connection take_idle();
    void keep(Connection connection);
    void reap();

    std::string url_, host_, path_;
    int port_ = 0;
    std::chrono::milliseconds timeout_;
    IdleLimits limits_;
    ResponseBudget budget_;
    ResponseLimits response_limits_;
    // Held for a push or a pop and a look at a socket, never while waiting.
    std::mutex mutex_;
    // Per carrier, oldest first: taken from the back, dropped from the front.
    std::map<const Reactor*, std::deque<Idle>> idle_;
    std::size_t idle_count_ = 0; // over all carriers
    // The reaper: wakes when the oldest idle connection reaches the timeout, closes what has.
    std::condition_variable reaper_wake_;
    bool stopping_ = false;
    std::thread reaper_; // last: started once everything above exists
};
