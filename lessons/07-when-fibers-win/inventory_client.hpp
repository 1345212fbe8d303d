// The downstream call of GET /orders/{id}: one GET to the "inventory" service on a kept-alive
// connection, through lesson 03's fiber-aware HTTP client.
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
#pragma once

#include "http_client.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

class InventoryClient {
public:
    // Throws std::invalid_argument when `url` is not http://IPv4:PORT/path.
    InventoryClient(const std::string& url, std::chrono::milliseconds timeout);

    // GETs the URL within the timeout. False, with `why` in one line, when it could not.
    // Waits as lesson 03's sockets wait: a fiber parks, a plain thread blocks.
    bool get(HttpResponse& response, std::string& why);

    const std::string& url() const { return url_; }

private:
    using Connection = std::unique_ptr<HttpClientConnection>;
    Connection take_idle();
    void keep(Connection connection);

    std::string url_, host_, path_;
    int port_ = 0;
    std::chrono::milliseconds timeout_;
    // Held for a vector push or pop, never while waiting.
    std::mutex mutex_;
    std::map<const Reactor*, std::vector<Connection>> idle_;
};
