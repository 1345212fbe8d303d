#include "connector_flags.hpp"

void add_connector_flags(Flags& flags, ConnectorOptions& options) {
    flags.add("port", options.port, "TCP port on 127.0.0.1; 0 picks a free one")
        .add("carriers", options.carriers, "carrier threads running the fibers; 0: one per core")
        .add("max-connections", options.max_connections,
             "open connections at most; at the limit the server stops accepting and new "
             "connections wait in the kernel's accept queue")
        .add("accept-count", options.accept_count,
             "the kernel's accept queue (listen backlog): connections waiting beyond "
             "max-connections; past it the kernel drops them and clients retry")
        .add("keep-alive-timeout", options.keep_alive_timeout,
             "close a kept-alive connection that sends no request for this long")
        .add("keep-alive-requests", options.keep_alive_requests,
             "requests per connection; the last response says Connection: close")
        .add("read-timeout", options.read_timeout,
             "a request head must arrive completely within this, or the answer is 408")
        .add("write-timeout", options.write_timeout,
             "close the connection when a client takes no response bytes for this long");
}
