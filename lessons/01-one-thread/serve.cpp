#include "lessons/01-one-thread/serve.hpp"

#include "lessons/01-one-thread/handler_exceptions.hpp"
#include "lessons/common/process.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sys/socket.h>
#include <thread>

namespace {

// The connection backlog: how many connections the kernel completes and queues for us before
// accept(). cpp-httplib's listen() uses 5; ten clients connecting at once overflow it, the kernel
// drops the extra SYNs and those clients retry only after a one-second TCP timeout, which adds a
// second to a "one second" checkpoint. Calling listen() again on a listening socket raises it.
constexpr int accept_backlog = 128;

// How long a stop waits for the workers to finish what they are doing, as the connector's does.
constexpr std::chrono::milliseconds stop_grace{5000};

// The listening socket is a protected member of httplib::Server; a member pointer taken through a
// derived class is the standard way to read it without changing the library.
struct ListeningSocket : httplib::Server {
    static int of(httplib::Server& server) { return server.*(&ListeningSocket::svr_sock_); }
};

} // namespace

void serve_until_shutdown(httplib::Server& server, const std::string& program, int port) {
    answer_exceptions_plainly(server); // a handler's exception: a bare 500, its text on stderr
    const std::string host = "127.0.0.1";
    // cpp-httplib's default sets SO_REUSEPORT, which lets a second server bind the same port and
    // silently take half of the connections (a forgotten server from an earlier run, say).
    // SO_REUSEADDR alone allows a quick restart and still refuses a port that is in use.
    server.set_socket_options([](socket_t sock) {
        const int yes = 1;
        ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    int bound = port;
    if (port == 0) {
        bound = server.bind_to_any_port(host);
    } else if (!server.bind_to_port(host, port)) {
        bound = -1;
    }
    if (bound < 0)
        fail(program, "cannot listen on " + host + ":" + std::to_string(port) + ": " +
                          explain_bind_failure(host, port));
    ::listen(ListeningSocket::of(server), accept_backlog);
    announce_listening(host, bound);

    // listen_after_bind() runs the accept loop until stop(); the main thread waits for a signal.
    std::atomic<bool> finished{false};
    std::thread accept_loop([&server, &finished] {
        server.listen_after_bind();
        finished = true;
    });
    wait_for_shutdown_signal();
    // stop() does nothing until the loop has started, and a signal may come first: repeat it.
    // The loop returns once the workers have finished their connections, and a client that
    // trickles its request keeps a worker reading for as long as it likes (cpp-httplib's read
    // timeout is per read): after the grace, exit without it.
    const auto give_up = std::chrono::steady_clock::now() + stop_grace;
    while (!finished) {
        if (std::chrono::steady_clock::now() > give_up) {
            std::fprintf(stderr, "%s: a worker still busy after %lld ms; exiting without it\n",
                         program.c_str(), static_cast<long long>(stop_grace.count()));
            std::fflush(nullptr);
            std::quick_exit(0); // no destructors: the worker still uses them
        }
        server.stop();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    accept_loop.join();
}
