#include "lessons/07-when-fibers-win/inventory_client.hpp"

#include "lessons/common/tracing.hpp"

InventoryClient::InventoryClient(const std::string& url, std::chrono::milliseconds timeout,
                                 IdleLimits idle)
    : url_(url), timeout_(timeout), limits_(idle) {
    split_url(url, host_, port_, path_);
}

// Newest first, as Go's Transport takes them: the warmest is the least likely to be closed by
// the server. Oldest first out: whatever idled past the timeout or was closed meanwhile goes.
InventoryClient::Connection InventoryClient::take_idle() {
    std::vector<Connection> dropped; // closed after the lock is released
    std::lock_guard<std::mutex> lock(mutex_);
    std::deque<Idle>& idle = idle_[Reactor::current()];
    const auto now = std::chrono::steady_clock::now();
    while (!idle.empty() && (now - idle.front().since >= limits_.timeout ||
                             !idle.front().connection->still_open())) {
        dropped.push_back(std::move(idle.front().connection));
        idle.pop_front();
    }
    while (!idle.empty()) {
        Connection connection = std::move(idle.back().connection);
        idle.pop_back();
        if (connection->still_open()) return connection; // else the server closed it meanwhile
        dropped.push_back(std::move(connection));
    }
    return nullptr;
}

void InventoryClient::keep(Connection connection) {
    Connection dropped; // closed after the lock is released
    std::lock_guard<std::mutex> lock(mutex_);
    std::deque<Idle>& idle = idle_[Reactor::current()];
    idle.push_back({std::move(connection), std::chrono::steady_clock::now()});
    if (idle.size() > limits_.max_per_carrier) {
        dropped = std::move(idle.front().connection); // the least recently used
        idle.pop_front();
    }
}

bool InventoryClient::get(HttpResponse& response, std::string& why) {
    const TraceWait call("downstream"); // a span in a --trace
    const Deadline deadline = deadline_after(timeout_);
    HttpClientFailure failure;
    // A kept connection the server closes just as we send fails without reaching it: GET is
    // safe to repeat, so that one failure is retried once on a fresh connection.
    if (Connection kept = take_idle()) {
        if (kept->try_get(path_, deadline, response, failure)) {
            if (response.keep_alive) keep(std::move(kept));
            return true;
        }
        if (failure.kind != HttpClientError::Kind::transport) {
            why = "inventory at " + url_ + ": " + failure.what;
            return false;
        }
    }
    Connection fresh = HttpClientConnection::open(host_, port_, deadline, failure);
    if (fresh && fresh->try_get(path_, deadline, response, failure)) {
        if (response.keep_alive) keep(std::move(fresh));
        return true;
    }
    why = "inventory at " + url_ + ": " + failure.what;
    return false;
}
