// The yardstick for lesson 03's benchmark: cpp-httplib serving the same routes with its own
// sockets and its own thread pool, configured like our connector (TCP_NODELAY, the same keep-alive
// limits), so the comparison is about the I/O model and nothing else.
#include "lessons/01-one-thread/benchmark_routes.hpp"
#include "lessons/01-one-thread/serve.hpp"
#include "lessons/common/flags.hpp"
#include "lessons/common/process.hpp"

int main(int argc, char** argv) {
    block_shutdown_signals();
    int port = 8080;
    int threads = CPPHTTPLIB_THREAD_POOL_COUNT; // the library's default: max(8, cores - 1)
    int keep_alive_requests = 100;              // as the connector's default
    Flags flags("httplib_baseline", "cpp-httplib's own server and thread pool, for comparison.");
    flags.add("port", port, 0, 65535, "TCP port on 127.0.0.1; 0 picks a free one")
        .add("threads", threads, 1, 10'000, "worker threads in cpp-httplib's pool")
        .add("keep-alive-requests", keep_alive_requests, 1, 1'000'000, "requests per connection");
    flags.parse(argc, argv);

    httplib::Server server;
    server.new_task_queue = [threads] {
        return new httplib::ThreadPool(static_cast<size_t>(threads));
    };
    server.set_tcp_nodelay(true);
    server.set_keep_alive_max_count(static_cast<size_t>(keep_alive_requests));
    add_benchmark_routes(server, thread_sleep);
    serve_until_shutdown(server, "httplib_baseline", port);
}
