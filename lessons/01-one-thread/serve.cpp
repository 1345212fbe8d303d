#include "serve.hpp"

#include "process.hpp"

#include <thread>

void serve_until_shutdown(httplib::Server& server, const std::string& program, int port) {
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
    announce_listening(host, bound);

    // listen_after_bind() runs the accept loop until stop(); the main thread waits for a signal.
    std::thread accept_loop([&server] { server.listen_after_bind(); });
    wait_for_shutdown_signal();
    server.stop();
    accept_loop.join();
}
