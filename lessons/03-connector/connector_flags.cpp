#include "lessons/03-connector/connector_flags.hpp"

namespace {

using namespace std::chrono_literals;

// The widest any of them may be set. Far beyond what this tutorial uses; their only job is to
// refuse a typo (a timeout of 5000s meant as 5000ms is an hour, still accepted) and a value
// that would overflow or wrap.
constexpr int most_carriers = 1024;
constexpr int most_connections = 1'000'000; // one descriptor each: `ulimit -n` binds first
constexpr int most_accept_count = 65535;    // the kernel caps it at net.core.somaxconn anyway
constexpr int most_keep_alive_requests = 1'000'000;
constexpr auto longest_timeout = 1h;

} // namespace

void add_connector_flags(Flags& flags, ConnectorOptions& options) {
    flags.add("port", options.port, 0, 65535, "TCP port on 127.0.0.1; 0 picks a free one")
        .add("carriers", options.carriers, 0, most_carriers,
             "carrier threads running the fibers; 0: one per core")
        .add("max-connections", options.max_connections, 1, most_connections,
             "open connections at most; at the limit the server stops accepting and new "
             "connections wait in the kernel's accept queue, where each one that waits takes "
             "the place of the kept-alive connection idle longest between its requests")
        .add("accept-count", options.accept_count, 1, most_accept_count,
             "the kernel's accept queue (listen backlog): connections waiting beyond "
             "max-connections; past it the kernel drops them and clients retry")
        .add("keep-alive-timeout", options.keep_alive_timeout, 1ms, longest_timeout,
             "close a kept-alive connection that sends no request for this long")
        .add("keep-alive-requests", options.keep_alive_requests, 1, most_keep_alive_requests,
             "requests per connection; the last response says Connection: close")
        .add("read-timeout", options.read_timeout, 1ms, longest_timeout,
             "a request head must arrive completely within this, or the answer is 408")
        .add("write-timeout", options.write_timeout, 1ms, longest_timeout,
             "close the connection when a client takes no response bytes for this long");
}
