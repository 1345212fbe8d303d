// Exercise 11: a downstream HTTP client that keeps its connections per carrier, and bounds them.
//
// Lesson 07's orders call an inventory service on kept connections, kept per carrier because a
// socket opened on a carrier belongs to that carrier's reactor. Its client opens a connection
// for every call that finds none idle: 2,000 fibers waiting at once are 2,000 sockets on the
// inventory. A DownstreamClient opens at most `per_carrier` per carrier, and a fiber that finds
// them all busy parks until one comes back, or until its deadline.
#pragma once

#include "lessons/instruments/client/http_client.hpp" // HttpClientConnection, HttpResponse

#include <chrono>
#include <string>

#include <boost/fiber/condition_variable.hpp>
#include <boost/fiber/mutex.hpp>
#include <map>
#include <memory>
#include <vector>

// ---- do not change: the graded tests use these declarations ----

class DownstreamClient {
public:
    // `base` is http://IPv4:PORT (a path in it is ignored); throws std::invalid_argument
    // otherwise. At most `per_carrier` connections (at least 1) are open per carrier at once,
    // busy and idle together; plain threads (no carrier) count as one more carrier (task 4).
    DownstreamClient(const std::string& base, int per_carrier);
    // Closes the idle connections. Destroy the client while its carriers still run.
    ~DownstreamClient();
    DownstreamClient(const DownstreamClient&) = delete;
    DownstreamClient& operator=(const DownstreamClient&) = delete;

    // GETs `path` within `timeout`, all waits included. True with the response; false with
    // `why`, one line that starts with the URL, when it could not (task 2). Task 1: reuses an
    // idle connection of the caller's carrier, keeps it again afterwards unless the server said
    // "Connection: close". Task 2: a kept connection that fails in transport is retried once on
    // a fresh one. Task 3: waits (parks a fiber, blocks a plain thread) while the carrier has
    // `per_carrier` connections open.
    bool get(const std::string& path, std::chrono::milliseconds timeout, HttpResponse& response,
             std::string& why);

    // Connections the calling carrier has open now, busy and idle (task 3). An idle one the
    // server has closed is not open: it is dropped, and frees its place.
    int open_here();

    // ---- end of do not change ----
private:
    using Connection = std::unique_ptr<HttpClientConnection>;
    // One carrier's connections. `open` counts the idle ones and those lent out.
    struct PerCarrier {
        std::vector<Connection> idle;
        int open = 0;
        boost::fibers::condition_variable returned; // a connection came back or a place freed
    };
    class Lease;
    // Drops the carrier's idle connections the server has closed, freeing their places. Under
    // mutex_.
    void drop_closed_locked(PerCarrier& carrier);

    std::string base_, host_;
    int port_ = 0;
    int per_carrier_;
    // A fiber mutex: get() waits on `returned` under it (and it is held for a vector push or
    // pop, never while talking to the server). Fibers and plain threads may both take it.
    boost::fibers::mutex mutex_;
    std::map<const Reactor*, PerCarrier> carriers_;
};
