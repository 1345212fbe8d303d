#include "lessons/07-when-fibers-win/inventory_client.hpp"

#include "lessons/common/process.hpp"
#include "lessons/common/tracing.hpp"

#include <algorithm>

InventoryClient::InventoryClient(const std::string& url, std::chrono::milliseconds timeout,
                                 IdleLimits idle, ResponseCaps caps)
    : url_(url), timeout_(timeout), limits_(idle),
      budget_(caps.memory_budget_bytes), response_limits_{caps.max_head_bytes, caps.max_body_bytes,
                                                          &budget_} {
    split_url(url, host_, port_, path_);
    reaper_ = std::thread([this] { reap(); });
}

InventoryClient::~InventoryClient() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    reaper_wake_.notify_one();
    reaper_.join();
    // The idle connections close with idle_: set aside, they may close on this thread.
}

// Newest first, as Go's Transport takes them: the warmest is the least likely to be closed by
// the server. Oldest first out: whatever idled past the timeout or was closed meanwhile goes.
InventoryClient::Connection InventoryClient::take_idle() {
    std::vector<Connection> dropped; // closed after the lock is released
    Connection taken;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        std::deque<Idle>& idle = idle_[Reactor::current()];
        const auto now = std::chrono::steady_clock::now();
        while (!idle.empty() && (now - idle.front().since >= limits_.timeout ||
                                 !idle.front().connection->still_open())) {
            dropped.push_back(std::move(idle.front().connection));
            idle.pop_front();
        }
        while (!idle.empty() && !taken) {
            Connection connection = std::move(idle.back().connection);
            idle.pop_back();
            if (connection->still_open()) {
                taken = std::move(connection);
            } else {
                dropped.push_back(std::move(connection)); // the server closed it meanwhile
            }
        }
        idle_count_ -= dropped.size() + (taken ? 1 : 0);
    }
    if (taken) taken->take_up(); // back on this carrier's reactor for the call
    return taken;
}

void InventoryClient::keep(Connection connection) {
    connection->set_aside(); // on the carrier whose reactor it leaves
    Connection dropped;      // closed after the lock is released
    bool first = false;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        std::deque<Idle>& idle = idle_[Reactor::current()];
        idle.push_back({std::move(connection), std::chrono::steady_clock::now()});
        first = idle_count_++ == 0;
        if (idle.size() > limits_.max_per_carrier) {
            dropped = std::move(idle.front().connection); // the least recently used
            idle.pop_front();
            --idle_count_;
        }
    }
    // The reaper sleeps until the oldest connection's time is up, or for good when there was
    // none: this one is its next.
    if (first) reaper_wake_.notify_one();
}

// Closes each kept connection once it has idled for limits_.timeout, on a timer: a burst and then
// silence must not leave its sockets behind (in CLOSE-WAIT once the server closes its ends).
void InventoryClient::reap() {
    name_this_thread("inventory-reap");
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
        const auto now = std::chrono::steady_clock::now();
        std::vector<Connection> expired;
        auto next = std::chrono::steady_clock::time_point::max();
        for (auto& [carrier, idle] : idle_) {
            while (!idle.empty() && now - idle.front().since >= limits_.timeout) {
                expired.push_back(std::move(idle.front().connection));
                idle.pop_front();
            }
            if (!idle.empty()) next = std::min(next, idle.front().since + limits_.timeout);
        }
        idle_count_ -= expired.size();
        if (!expired.empty()) {
            lock.unlock();
            expired.clear(); // closed without the lock: calls need it meanwhile
            lock.lock();
            continue;
        }
        if (next == std::chrono::steady_clock::time_point::max()) {
            reaper_wake_.wait(lock);
        } else {
            reaper_wake_.wait_until(lock, next);
        }
    }
}

bool InventoryClient::get(HttpResponse& response, std::string& why) {
    const TraceWait call("downstream"); // a span in a --trace
    const Deadline deadline = deadline_after(timeout_);
    HttpClientFailure failure;
    // A kept connection the server closes just as we send fails without reaching it: GET is
    // safe to repeat, so that one failure is retried once on a fresh connection. A timeout, or
    // an answer the budget has no room for, is the call's answer at once.
    if (Connection kept = take_idle()) {
        if (kept->try_get(path_, deadline, response, failure, response_limits_)) {
            if (response.keep_alive) keep(std::move(kept));
            return true;
        }
        if (failure.kind != HttpClientError::Kind::transport) {
            why = "inventory at " + url_ + ": " + failure.what;
            return false;
        }
    }
    Connection fresh = HttpClientConnection::open(host_, port_, deadline, failure);
    if (fresh && fresh->try_get(path_, deadline, response, failure, response_limits_)) {
        if (response.keep_alive) keep(std::move(fresh));
        return true;
    }
    why = "inventory at " + url_ + ": " + failure.what;
    return false;
}
