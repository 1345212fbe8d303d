#include "lessons/instruments/spike/spike_attempt.hpp"

#include <algorithm>

namespace {

int sentinel_for(const HttpClientFailure& failure) {
    switch (failure.kind) {
    case HttpClientError::Kind::connect_timeout:
        return sentinel::connect_timeout;
    case HttpClientError::Kind::response_timeout:
        return sentinel::response_timeout;
    case HttpClientError::Kind::transport:
    case HttpClientError::Kind::over_budget: // the spike gives its calls no budget
        return sentinel::transport_error;
    }
    return sentinel::transport_error;
}

} // namespace

int attempt(std::unique_ptr<HttpClientConnection>& connection, const SpikeTarget& target,
            std::chrono::steady_clock::time_point start) {
    // Both deadlines count from the attempt's start, so no attempt outlives --timeout; the
    // connect's own is never later than the whole attempt's.
    const Deadline answer_by = start + target.timeout;
    const Deadline connected_by = start + std::min(target.connect_timeout, target.timeout);
    // The client's non-throwing calls: failures are routine here (see http_client.hpp).
    HttpClientFailure failure;
    // A kept-alive connection the server closed while we backed off would fail the request
    // without the server ever seeing it: that says nothing about the server, so reconnect.
    if (connection && !connection->still_open()) connection.reset();
    if (!connection) {
        connection = HttpClientConnection::open(target.host, target.port, connected_by, failure);
        if (!connection) return sentinel_for(failure);
    }
    HttpResponse response;
    if (!connection->try_get(target.path, answer_by, response, failure)) {
        connection.reset(); // a failed exchange leaves the connection in an unknown state
        return sentinel_for(failure);
    }
    if (!response.keep_alive) connection.reset();
    if (response.status < 100 || response.status > 599) {
        connection.reset();
        return sentinel::transport_error; // not a status line we can believe
    }
    return response.status;
}
