#include "inventory_client.hpp"

InventoryClient::InventoryClient(const std::string& url, std::chrono::milliseconds timeout)
    : url_(url), timeout_(timeout) {
    split_url(url, host_, port_, path_);
}

InventoryClient::Connection InventoryClient::take_idle() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<Connection>& idle = idle_[Reactor::current()];
    while (!idle.empty()) {
        Connection connection = std::move(idle.back());
        idle.pop_back();
        if (connection->still_open()) return connection; // else the server closed it meanwhile
    }
    return nullptr;
}

void InventoryClient::keep(Connection connection) {
    std::lock_guard<std::mutex> lock(mutex_);
    idle_[Reactor::current()].push_back(std::move(connection));
}

bool InventoryClient::get(HttpResponse& response, std::string& why) {
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
