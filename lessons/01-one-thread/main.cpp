// Lesson 01: one worker thread and a one-second endpoint.
// Ten concurrent requests to /benchmark take ten seconds: the thread sleeps through each in turn.
#include "lessons/01-one-thread/benchmark_routes.hpp"
#include "lessons/01-one-thread/serve.hpp"
#include "lessons/common/flags.hpp"
#include "lessons/common/process.hpp"

int main(int argc, char** argv) {
    block_shutdown_signals();
    int port = 8080;
    bool keep_alive = false;
    Flags flags("lesson01", "One worker thread serves GET /benchmark, which sleeps one second.");
    flags.add("port", port, 0, 65535, "TCP port on 127.0.0.1; 0 picks a free one")
        .add("keep-alive", keep_alive,
             "keep connections open between requests, as the library does by default; the one "
             "worker then stays with one client until it goes quiet for 5 s");
    flags.parse(argc, argv);

    httplib::Server server;
    // cpp-httplib hands every accepted connection to this task queue: one thread, one at a time.
    server.new_task_queue = [] { return new httplib::ThreadPool(1); };
    if (!keep_alive) {
        // One request per connection: the response says "Connection: close", so the worker is
        // free for the next connection after every request instead of waiting on this one.
        server.set_keep_alive_max_count(1);
    }
    add_benchmark_routes(server, thread_sleep);
    serve_until_shutdown(server, "lesson01", port);
}
