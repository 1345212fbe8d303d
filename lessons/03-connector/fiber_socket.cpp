#include "lessons/03-connector/fiber_socket.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

void address_of(int fd, bool remote, std::string& ip, int& port) {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    const int rc = remote ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length)
                          : ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    ip.clear();
    port = 0;
    if (rc != 0 || address.ss_family != AF_INET) return;
    const auto* in = reinterpret_cast<const sockaddr_in*>(&address);
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    ip = text;
    port = ntohs(in->sin_port);
}

} // namespace

FiberSocket::FiberSocket(int fd) {
    watch_.fd = fd;
    const int flags = ::fcntl(fd, F_GETFL);
    if (!(flags & O_NONBLOCK)) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    if (Reactor* reactor = Reactor::current()) reactor->add(watch_);
}

FiberSocket::~FiberSocket() {
    if (watch_.reactor != nullptr) watch_.reactor->remove(watch_);
    ::close(watch_.fd);
}

void FiberSocket::leave_reactor() {
    if (watch_.reactor == nullptr) return;
    watch_.reactor->remove(watch_);
    // Edges seen while registered: joining again reports whatever is ready then.
    watch_.readable = watch_.writable = false;
}

void FiberSocket::join_reactor() {
    if (watch_.reactor != nullptr) return;
    if (Reactor* reactor = Reactor::current()) reactor->add(watch_);
}

int FiberSocket::try_connect(const std::string& host, int port, Deadline deadline,
                             std::string& error) {
    // Closes `fd` (if any) and fails with `text` and errno `code`.
    auto failed = [&](int fd, const std::string& text, int code) {
        if (fd >= 0) ::close(fd);
        error = text;
        errno = code;
        return -1;
    };
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    if (::inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1)
        return failed(-1, "'" + host + "' is not an IPv4 address", EINVAL);
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        const int code = errno;
        return failed(-1, std::string("socket: ") + std::strerror(code), code);
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        const int code = errno;
        if (code != EINPROGRESS)
            return failed(fd, std::string("connect: ") + std::strerror(code), code);
        // A non-blocking connect completes when the socket turns writable; SO_ERROR says how.
        if (!wait_ready(fd, Direction::write, deadline))
            return failed(fd, "connect timed out", ETIMEDOUT);
        int status = 0;
        socklen_t length = sizeof status;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &status, &length);
        if (status != 0)
            return failed(fd, std::string("connect: ") + std::strerror(status), status);
    }
    return fd;
}

ssize_t FiberSocket::receive(char* data, std::size_t size, Deadline deadline) {
    for (;;) {
        const ssize_t n = ::recv(watch_.fd, data, size, 0);
        drained_ = n >= 0 && static_cast<std::size_t>(n) < size;
        if (n >= 0) return n;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
        drained_ = true;
        if (!wait_ready(watch_, Direction::read, deadline)) {
            errno = ETIMEDOUT;
            return -1;
        }
    }
}

bool FiberSocket::wait_readable(Deadline deadline) {
    // After a short read the kernel had nothing more: what came since raised an edge. Unless
    // the peer ever sent an urgent byte: a read stops at its mark with more behind it.
    if (drained_ && !watch_.urgent) return wait_ready(watch_, Direction::read, deadline);
    // Otherwise try first: bytes that came with an edge already seen (a pipelined request the
    // last read left in the kernel) raise no new one, so a wait would wait for nothing. A peek
    // needs no buffer, so a connection waiting for its next request holds none.
    for (;;) {
        char byte;
        if (::recv(watch_.fd, &byte, 1, MSG_PEEK) >= 0) return true; // a byte, or the peer closed
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return true; // receive() reports the error
        return wait_ready(watch_, Direction::read, deadline);
    }
}

ssize_t FiberSocket::send_some(const char* data, std::size_t size, Deadline deadline) {
    for (;;) {
        const ssize_t n = ::send(watch_.fd, data, size, MSG_NOSIGNAL);
        if (n >= 0) return n;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
        if (!wait_ready(watch_, Direction::write, deadline)) {
            errno = ETIMEDOUT;
            return -1;
        }
    }
}

bool FiberSocket::send_all(const char* data, std::size_t size, Deadline deadline) {
    for (std::size_t sent = 0; sent < size;) {
        const ssize_t n = send_some(data + sent, size - sent, deadline);
        if (n < 0) return false;
        sent += static_cast<std::size_t>(n);
    }
    return true;
}

void FiberSocket::remote_address(std::string& ip, int& port) {
    if (remote_port_ < 0) address_of(watch_.fd, true, remote_ip_, remote_port_);
    ip = remote_ip_;
    port = remote_port_;
}

void FiberSocket::local_address(std::string& ip, int& port) {
    if (local_port_ < 0) address_of(watch_.fd, false, local_ip_, local_port_);
    ip = local_ip_;
    port = local_port_;
}
