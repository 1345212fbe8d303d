// One attempt of a spike worker, and the status its CSV row records.
//
// An attempt is: reconnect if needed, send GET, read the whole answer. Its status is the HTTP
// status, or a sentinel when no answer came:
//   -1  response timeout: connected, but no complete answer within --timeout of the start
//   -2  any other transport error: refused, reset, closed without an answer, not HTTP
//   -3  connect timeout: the connect did not finish within --connect-timeout. Checked first: a
//       connect that times out is -3 even when --timeout passed too.
//   -4  interrupted: the spike was stopped (Ctrl+C) before this attempt ended
//   -5  not sent (open loop only): when a worker was free to send it, its --timeout had passed
//       since its intended start, or less than 10 ms of it was left (a tenth of a --timeout under
//       100 ms). Every attempt ends by its own deadline, so only a spike that fell that far behind
//       its schedule (starved of CPU, or too few workers for its rate) writes these. One status
//       for both: in each the spike was late and the server never saw the request; begun with
//       a sliver left, its connect was recorded as -3, blaming the server for the spike.
#pragma once

#include "lessons/instruments/client/http_client.hpp"

#include <chrono>
#include <memory>
#include <string>

namespace sentinel {
constexpr int response_timeout = -1;
constexpr int transport_error = -2;
constexpr int connect_timeout = -3;
constexpr int interrupted = -4;
constexpr int not_sent = -5;
} // namespace sentinel

struct SpikeTarget {
    std::string host;
    int port = 0;
    std::string path;
    std::chrono::milliseconds timeout;
    std::chrono::milliseconds connect_timeout;
};

// Runs one attempt that started at `start` on `connection` (a worker's kept-alive connection:
// null when there is none yet, reset here after an error or when the server closes it) and
// returns its status. Every failure is a sentinel, none an exception: see http_client.hpp.
int attempt(std::unique_ptr<HttpClientConnection>& connection, const SpikeTarget& target,
            std::chrono::steady_clock::time_point start);
