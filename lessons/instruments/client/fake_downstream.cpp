#include "lessons/instruments/client/fake_downstream.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <netinet/in.h>
#include <poll.h>
#include <set>
#include <sstream>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Every wait of the fake is sliced this thin, so that a stop is seen within it.
constexpr auto slice = 20ms;

// Waits up to `slice` for `events` on `fd`: > 0 ready, 0 not yet, < 0 failed.
int wait_for(int fd, short events) {
    pollfd request{fd, events, 0};
    const int ready = ::poll(&request, 1, static_cast<int>(slice.count()));
    return ready < 0 && errno == EINTR ? 0 : ready;
}

} // namespace

bool FakeDownstream::Peer::read_request(std::chrono::milliseconds timeout) {
    const auto give_up = Clock::now() + timeout;
    for (;;) {
        const std::size_t end = pending_.find("\r\n\r\n");
        if (end != std::string::npos) {
            pending_.erase(0, end + 4);
            return true;
        }
        if (stopping_ || Clock::now() >= give_up) return false;
        const int ready = wait_for(fd_, POLLIN);
        if (ready < 0) return false;
        if (ready == 0) continue;
        char chunk[4096];
        const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
        if (n <= 0) return false; // closed, reset
        pending_.append(chunk, static_cast<std::size_t>(n));
    }
}

bool FakeDownstream::Peer::send(std::string_view bytes) {
    while (!bytes.empty()) {
        if (stopping_) return false;
        const int ready = wait_for(fd_, POLLOUT);
        if (ready < 0) return false;
        if (ready == 0) continue;
        const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
        if (n < 0) return false; // the client is gone
        bytes.remove_prefix(static_cast<std::size_t>(n));
        sent_ += static_cast<std::size_t>(n);
    }
    return true;
}

FakeDownstream::FakeDownstream(Script script) : script_(std::move(script)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    // A backlog for a burst: the tests open a few hundred connections at once.
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), size) != 0 ||
        ::listen(listen_fd_, 1024) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &size) != 0)
        throw std::runtime_error("the fake downstream could not listen on 127.0.0.1");
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
}

FakeDownstream::~FakeDownstream() {
    stopping_ = true;
    acceptor_.join();
    for (std::thread& connection : connections_)
        connection.join();
    ::close(listen_fd_);
}

std::string FakeDownstream::url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
}

void FakeDownstream::accept_loop() {
    while (!stopping_) {
        if (wait_for(listen_fd_, POLLIN) <= 0) continue;
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) continue;
        ++accepted_;
        std::lock_guard<std::mutex> lock(mutex_);
        connections_.emplace_back([this, fd] {
            Peer peer(fd, stopping_);
            script_(peer);
            ::close(fd);
            ++ended_;
        });
    }
}

void flood_header_lines(FakeDownstream::Peer& peer) {
    if (!peer.read_request() || !peer.send("HTTP/1.1 200 OK\r\n")) return;
    const std::string line = "X-Flood: " + std::string(989, 'a') + "\r\n"; // 1,000 bytes
    const auto until = Clock::now() + hostile_for;
    while (Clock::now() < until && peer.sent() < hostile_bytes && peer.send(line)) {
    }
}

void trickle_header(FakeDownstream::Peer& peer) {
    if (!peer.read_request() || !peer.send("HTTP/1.1 200 OK\r\nX-Trickle: ")) return;
    const auto until = Clock::now() + hostile_for;
    while (Clock::now() < until && peer.send("a"))
        std::this_thread::sleep_for(10ms);
}

void huge_content_length(FakeDownstream::Peer& peer) {
    if (!peer.read_request() || !peer.send("HTTP/1.1 200 OK\r\nContent-Length: 4294967296\r\n\r\n"))
        return;
    const std::string block(64 * 1024, 'a');
    const auto until = Clock::now() + hostile_for;
    while (Clock::now() < until && peer.sent() < hostile_bytes && peer.send(block)) {
    }
}

void chunked_answer(FakeDownstream::Peer& peer) {
    if (!peer.read_request() ||
        !peer.send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"))
        return;
    if (peer.read_request()) peer.send("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecond");
}

void answer_until_idle(FakeDownstream::Peer& peer, std::chrono::milliseconds idle_close) {
    while (peer.read_request(idle_close) &&
           peer.send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")) {
    }
}

std::vector<TcpSocket> tcp_sockets_of(int pid) {
    const std::string proc = "/proc/" + std::to_string(pid);
    std::set<std::string> inodes; // of the process's sockets: their fd links read "socket:[N]"
    if (DIR* fds = ::opendir((proc + "/fd").c_str())) {
        while (const dirent* entry = ::readdir(fds)) {
            char target[64] = {};
            const std::string link = proc + "/fd/" + entry->d_name;
            if (::readlink(link.c_str(), target, sizeof target - 1) > 0 &&
                std::string(target).rfind("socket:[", 0) == 0)
                inodes.insert(std::string(target + 8, std::string(target).size() - 9));
        }
        ::closedir(fds);
    }
    // Lines: "sl local_address rem_address st tx_queue:rx_queue tr:when retrnsmt uid timeout
    // inode ...", addresses as HEX_IP:HEX_PORT, queues in hex.
    std::ifstream table(proc + "/net/tcp");
    std::string line;
    std::getline(table, line); // the header
    std::vector<TcpSocket> sockets;
    while (std::getline(table, line)) {
        std::istringstream fields(line);
        std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
        fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
            timeout >> inode;
        if (inodes.count(inode) == 0) continue;
        const auto port = [](const std::string& address) {
            return std::stoi(address.substr(address.find(':') + 1), nullptr, 16);
        };
        sockets.push_back({state, port(local), port(remote),
                           std::stoul(queues.substr(queues.find(':') + 1), nullptr, 16)});
    }
    return sockets;
}

int sockets_of(int pid, int remote_port, const std::string& state) {
    int count = 0;
    for (const TcpSocket& socket : tcp_sockets_of(pid))
        count += socket.remote_port == remote_port && socket.state == state;
    return count;
}
