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
// Idle connections are kept per carrier (Reactor::current()), because a socket opened on a
// carrier belongs to that carrier's reactor (lesson 03): a fiber takes only its own carrier's,
// and the platform threads (no reactor) share theirs, which wait in poll() anyway.
//
// A kept connection is a descriptor. The server closes it after its own keep-alive timeout, and
// until the client closes its end too the socket waits in CLOSE-WAIT, held for nothing (issue 26:
// a burst of 300 orders left 298 so, when idle connections were kept without limit and only the
// newest was ever looked at). So the kept ones are bounded and short-lived (IdleLimits).
#pragma once

#include "lessons/instruments/client/http_client.hpp"

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct IdleLimits {
    // Connections kept idle per carrier at most; past it the least recently used one is
    // closed. Above what one carrier has in flight at lesson 07's checkpoint (2,000 workers on
    // two carriers, or 200 platform threads sharing one list), so that a busy client keeps what
    // it reuses instead of closing and reopening connections; low enough that a burst cannot
    // leave thousands of idle descriptors behind.
    std::size_t max_per_carrier = 1024;
    // A connection idle this long is closed (at the next call on its carrier). Below the 5 s
    // keep-alive timeout of lesson 03 (and of Node.js and Apache), so the client closes first
    // and never sends on a connection the server is closing; not far below, because connections
    // used only at the peaks of a busy run would be closed and opened again, a connect each.
    std::chrono::milliseconds timeout{4000};
};

class InventoryClient {
public:
    // Throws std::invalid_argument when `url` is not http://IPv4:PORT/path.
    InventoryClient(const std::string& url, std::chrono::milliseconds timeout,
                    IdleLimits idle = {});

    // GETs the URL within the timeout. False, with `why` in one line, when it could not.
    // Waits as lesson 03's sockets wait: a fiber parks, a plain thread blocks.
    bool get(HttpResponse& response, std::string& why);

    const std::string& url() const { return url_; }

private:
    using Connection = std::unique_ptr<HttpClientConnection>;
    struct Idle {
        Connection connection;
        std::chrono::steady_clock::time_point since;
    };
    Connection take_idle();
    void keep(Connection connection);

    std::string url_, host_, path_;
    int port_ = 0;
    std::chrono::milliseconds timeout_;
    IdleLimits limits_;
    // Held for a push or a pop and a look at a socket, never while waiting.
    std::mutex mutex_;
    // Per carrier, oldest first: taken from the back, dropped from the front.
    std::map<const Reactor*, std::deque<Idle>> idle_;
};
