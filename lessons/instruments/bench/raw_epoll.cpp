// Rungs 1 and 2 of the ceiling ladder (ceiling-ladder, beside it): GET /hello answered by one
// thread around one epoll, with nothing else between the socket and the answer.
//
//   raw_epoll --answer fixed     every complete request head gets the same bytes back: no
//                                parsing, no routing, no handler (the machine's ceiling)
//   raw_epoll --answer httplib   each complete head goes to cpp-httplib's process_request, the
//                                parser, router and response writer lesson 03 runs on fibers,
//                                here on plain bytes (the library's ceiling)
//
// Lesson 03's connector runs that same library call on a fiber per connection; the gap between
// rung 2 and the connector on one carrier is what the fibers and the connector add.
// A yardstick for wrk, not a server: no timeouts, no request bodies, no write queue.
#include "lessons/01-one-thread/benchmark_routes.hpp"
#include "lessons/03-connector/http_app.hpp"
#include "lessons/common/flags.hpp"
#include "lessons/common/process.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <functional>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <unordered_map>

namespace {

// A request head that grows past this without its blank line closes the connection: the
// yardstick keeps no unbounded buffer (lesson 03's guard refuses heads of this size with 431).
constexpr std::size_t max_head_bytes = 8 * 1024;
// Ready sockets one epoll_wait hands back, as in lesson 03's reactor.
constexpr int events_per_wait = 256;

// What the connector's /hello answers, minus the headers cpp-httplib adds (Keep-Alive, ...).
constexpr char fixed_answer[] =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 6\r\n\r\nhello\n";

struct Connection {
    int fd = -1;
    std::string in;  // received, not yet answered
    std::string out; // answered, not yet sent
    std::string peer_ip;
    int peer_port = 0;
};

// One buffered request head as cpp-httplib wants to see it: read() hands out the head's bytes
// (the library reads them one at a time), write() gathers the response for the loop to send.
class HeadStream final : public httplib::Stream {
public:
    HeadStream(Connection& connection, std::size_t head_length)
        : c_(connection), end_(head_length) {}
    bool is_readable() const override { return at_ < end_; }
    bool is_writable() const override { return true; }
    ssize_t read(char* data, std::size_t size) override {
        const std::size_t n = std::min(size, end_ - at_);
        std::memcpy(data, c_.in.data() + at_, n);
        at_ += n;
        return static_cast<ssize_t>(n);
    }
    ssize_t write(const char* data, std::size_t size) override {
        c_.out.append(data, size);
        return static_cast<ssize_t>(size);
    }
    void get_remote_ip_and_port(std::string& ip, int& port) const override {
        ip = c_.peer_ip;
        port = c_.peer_port;
    }
    void get_local_ip_and_port(std::string& ip, int& port) const override {
        ip = "127.0.0.1"; // where main() listens
        port = 0;
    }
    socket_t socket() const override { return c_.fd; }

private:
    Connection& c_;
    std::size_t at_ = 0, end_;
};

// Answers the complete head at the front of c.in (head_length bytes) into c.out and drops it.
// Returns false when the connection must close after what is in c.out.
using Answer = std::function<bool(Connection& c, std::size_t head_length)>;

// Sends c.out whole, or gives up on the connection (false): a client that stops reading its
// answers would need a write queue, which this yardstick does not keep.
bool send_out(Connection& c) {
    const ssize_t sent = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    const bool whole = sent == static_cast<ssize_t>(c.out.size());
    c.out.clear();
    return whole;
}

// One readable event: read what is there, answer every complete head, send. False: close.
bool on_readable(Connection& c, const Answer& answer) {
    char buffer[16 * 1024];
    const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, 0);
    if (n == 0) return false; // the client closed
    if (n < 0) return errno == EAGAIN || errno == EINTR;
    c.in.append(buffer, static_cast<std::size_t>(n));
    bool keep = true;
    for (std::size_t end; keep && (end = c.in.find("\r\n\r\n")) != std::string::npos;)
        keep = answer(c, end + 4);
    if (c.in.size() > max_head_bytes) keep = false;
    return send_out(c) && keep;
}

int listen_on_loopback(int port) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(fd, SOMAXCONN) != 0)
        fail("raw_epoll", explain_bind_failure("127.0.0.1", port));
    socklen_t length = sizeof address;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    announce_listening("127.0.0.1", ntohs(address.sin_port));
    return fd;
}

[[noreturn]] void serve(int listen_fd, const Answer& answer) {
    const int epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
    epoll_event event{};
    event.events = EPOLLIN;   // level-triggered: simplest, one recv per wake-up is enough
    event.data.ptr = nullptr; // nullptr marks the listening socket
    ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &event);
    std::unordered_map<int, Connection> connections; // its nodes never move: event.data.ptr
    epoll_event ready[events_per_wait];
    for (;;) {
        const int count = ::epoll_wait(epoll_fd, ready, events_per_wait, -1);
        for (int i = 0; i < count; ++i) {
            if (ready[i].data.ptr == nullptr) {
                sockaddr_in peer{};
                socklen_t length = sizeof peer;
                const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &length,
                                         SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0) continue; // a client that left, or out of descriptors: next time
                const int one = 1;
                ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                Connection& c = connections[fd];
                c.fd = fd;
                char ip[INET_ADDRSTRLEN] = {};
                c.peer_ip = ::inet_ntop(AF_INET, &peer.sin_addr, ip, sizeof ip);
                c.peer_port = ntohs(peer.sin_port);
                event.data.ptr = &c;
                ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event);
                continue;
            }
            auto& c = *static_cast<Connection*>(ready[i].data.ptr);
            if (on_readable(c, answer)) continue;
            ::close(c.fd); // also leaves the epoll set
            connections.erase(c.fd);
        }
    }
}

} // namespace

int main(int argc, char** argv) {
    int port = 8080;
    std::string mode = "fixed";
    Flags flags("raw_epoll", "One thread, one epoll, GET /hello: the ceiling ladder's rungs 1 "
                             "and 2. Ends on SIGTERM or Ctrl+C.");
    flags.add("port", port, 0, 65535, "TCP port on 127.0.0.1; 0 picks a free one")
        .add("answer", mode, {"fixed", "httplib"},
             "fixed: the same bytes for every request; httplib: cpp-httplib's process_request");
    flags.parse(argc, argv);

    // The same routes as every lesson server; /benchmark answers at once, so that it cannot
    // block the one thread, but it is still there for the router to try first.
    HttpApp app;
    add_benchmark_routes(app, thread_sleep, nullptr, std::chrono::milliseconds(0));
    app.set_keep_alive_max_count(1'000'000); // as the ladder runs every server: kept connections

    const Answer fixed = [](Connection& c, std::size_t head_length) {
        c.out.append(fixed_answer, sizeof fixed_answer - 1);
        c.in.erase(0, head_length);
        return true;
    };
    const Answer library = [&app](Connection& c, std::size_t head_length) {
        HeadStream stream(c, head_length);
        bool client_asked_to_close = false;
        const bool answered = app.process(stream, false, client_asked_to_close);
        c.in.erase(0, head_length);
        return answered && !client_asked_to_close;
    };
    serve(listen_on_loopback(port), mode == "fixed" ? fixed : library);
}
