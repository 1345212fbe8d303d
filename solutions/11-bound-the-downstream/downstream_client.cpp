#include "downstream_client.hpp"

#include <algorithm>
#include <mutex>

// A place among the carrier's `per_carrier` connections, held for one get(): with a kept
// connection in it, or empty until get() opens one. Whatever happens, the destructor gives the
// place back (with the connection when it may be kept) and wakes one waiter: a place lost on
// an error path would shrink the carrier's share for good.
class DownstreamClient::Lease {
public:
    Lease(DownstreamClient& client, PerCarrier& carrier) : client_(client), carrier_(carrier) {}
    ~Lease() {
        std::lock_guard<boost::fibers::mutex> lock(client_.mutex_);
        if (connection && keep)
            carrier_.idle.push_back(std::move(connection));
        else
            --carrier_.open;
        carrier_.returned.notify_one();
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;

    Connection connection; // null: the place is free, open one
    bool keep = false;     // set after a response that allows it

private:
    DownstreamClient& client_;
    PerCarrier& carrier_;
};

DownstreamClient::DownstreamClient(const std::string& base, int per_carrier)
    : base_(base), per_carrier_(per_carrier < 1 ? 1 : per_carrier) {
    std::string path;
    split_url(base, host_, port_, path);
    base_ = "http://" + host_ + ":" + std::to_string(port_);
}

DownstreamClient::~DownstreamClient() = default;

bool DownstreamClient::get(const std::string& path, std::chrono::milliseconds timeout,
                           HttpResponse& response, std::string& why) {
    const Deadline deadline = deadline_after(timeout);
    std::unique_ptr<Lease> lease;
    {
        std::unique_lock<boost::fibers::mutex> lock(mutex_);
        PerCarrier& carrier = carriers_[Reactor::current()];
        const auto ready = [&] {
            drop_closed_locked(carrier);
            return !carrier.idle.empty() || carrier.open < per_carrier_;
        };
        // The predicate form: Boost 1.74 may report a timeout after a notify.
        if (!carrier.returned.wait_until(lock, deadline, ready)) {
            why = base_ + path + ": no connection free before the deadline (" +
                  std::to_string(per_carrier_) + " busy on this carrier)";
            return false;
        }
        lease = std::make_unique<Lease>(*this, carrier);
        if (carrier.idle.empty()) {
            ++carrier.open;
        } else {
            lease->connection = std::move(carrier.idle.back());
            carrier.idle.pop_back();
        }
    }

    HttpClientFailure failure;
    // A kept connection the server closed just as we sent fails without reaching it. GET is
    // safe to repeat: that one failure is retried once, on a fresh connection in the same place.
    if (lease->connection) {
        if (lease->connection->try_get(path, deadline, response, failure)) {
            lease->keep = response.keep_alive;
            return true;
        }
        lease->connection.reset();
        if (failure.kind != HttpClientError::Kind::transport) {
            why = base_ + path + ": " + failure.what;
            return false;
        }
    }
    lease->connection = HttpClientConnection::open(host_, port_, deadline, failure);
    if (lease->connection && lease->connection->try_get(path, deadline, response, failure)) {
        lease->keep = response.keep_alive;
        return true;
    }
    why = base_ + path + ": " + failure.what;
    return false;
}

int DownstreamClient::open_here() {
    std::lock_guard<boost::fibers::mutex> lock(mutex_);
    PerCarrier& carrier = carriers_[Reactor::current()];
    drop_closed_locked(carrier); // a connection the server closed is not open
    return carrier.open;
}

void DownstreamClient::drop_closed_locked(PerCarrier& carrier) {
    // An idle connection the server closed meanwhile is no connection: it frees its place now,
    // and its descriptor, instead of sitting in CLOSE-WAIT until someone takes it.
    const auto closed = std::remove_if(carrier.idle.begin(), carrier.idle.end(),
                                       [](const Connection& c) { return !c->still_open(); });
    carrier.open -= static_cast<int>(carrier.idle.end() - closed);
    carrier.idle.erase(closed, carrier.idle.end());
}
