// A downstream service that misbehaves on purpose, for the tests of an HTTP client: it listens on
// 127.0.0.1 (a free port) and runs a script, on a thread of its own, for every connection it
// accepts. A script talks to the client through a Peer, whose waits all end when the
// FakeDownstream is destroyed: a script that floods "forever" ends with its test. The scripts
// below are the hostile servers of issue 26 (case 5): each ends by itself after `hostile_for` or
// `hostile_bytes`, so that a client that never gives up (the code before the fix) fails its test
// instead of hanging it.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

// How long a hostile script keeps at it, and how much it sends at most: far longer and larger
// than any client that honours its deadline and limits tolerates, short enough for a test.
constexpr std::chrono::seconds hostile_for{10};
constexpr std::size_t hostile_bytes = 64u << 20;

class FakeDownstream {
public:
    // One accepted connection, seen from the server's side.
    class Peer {
    public:
        Peer(int fd, const std::atomic<bool>& stopping) : fd_(fd), stopping_(stopping) {}
        // Reads up to the end of the next request head (its blank line). False when the client
        // closed, `timeout` passed first, or the fake is stopping.
        bool read_request(std::chrono::milliseconds timeout = std::chrono::seconds(10));
        // Sends all of `bytes`. False when the client is gone or the fake is stopping.
        bool send(std::string_view bytes);
        std::size_t sent() const { return sent_; }

    private:
        int fd_;
        const std::atomic<bool>& stopping_;
        std::string pending_; // bytes read past the last request head
        std::size_t sent_ = 0;
    };
    using Script = std::function<void(Peer&)>;

    explicit FakeDownstream(Script script);
    ~FakeDownstream();
    FakeDownstream(const FakeDownstream&) = delete;
    FakeDownstream& operator=(const FakeDownstream&) = delete;

    int port() const { return port_; }
    std::string url(const std::string& path) const;
    int accepted() const { return accepted_; }
    int ended() const { return ended_; } // connections whose script returned: closed by the fake

private:
    void accept_loop();

    Script script_;
    int listen_fd_ = -1;
    int port_ = 0;
    std::atomic<bool> stopping_{false};
    std::atomic<int> accepted_{0}, ended_{0};
    std::mutex mutex_; // guards connections_
    std::vector<std::thread> connections_;
    std::thread acceptor_;
};

// The scripts. Each reads one request first, as a server does.
// "HTTP/1.1 200 OK", then a header line of 1,000 bytes after another, as fast as it can.
void flood_header_lines(FakeDownstream::Peer& peer);
// "HTTP/1.1 200 OK", then one header byte every 10 ms.
void trickle_header(FakeDownstream::Peer& peer);
// A head announcing a 4 GiB body, then the body as fast as it can.
void huge_content_length(FakeDownstream::Peer& peer);
// A chunked answer ("hello"), then an ordinary one to a second request on the same connection.
void chunked_answer(FakeDownstream::Peer& peer);
// 200 "ok" to each request on a kept connection; closes it once idle for `idle_close`.
void answer_until_idle(FakeDownstream::Peer& peer, std::chrono::milliseconds idle_close);

// A TCP socket as /proc/net/tcp shows it.
struct TcpSocket {
    std::string state; // "01" ESTABLISHED, "08" CLOSE_WAIT, ...
    int local_port = 0, remote_port = 0;
    std::size_t rx_queue = 0; // bytes received that the owner has not read yet
};
// The IPv4 TCP sockets that process `pid` holds a descriptor of: the inodes of its descriptors
// (/proc/PID/fd) matched with /proc/PID/net/tcp.
std::vector<TcpSocket> tcp_sockets_of(int pid);
// How many of them are connected to `remote_port` and in `state`.
int sockets_of(int pid, int remote_port, const std::string& state);
