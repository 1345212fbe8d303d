#include "line_socket.hpp"

#include <cerrno>
#include <sys/socket.h>
#include <system_error>

ssize_t read_some(int fd, char* buffer, std::size_t size, Deadline deadline) {
    for (;;) {
        // Try first: the bytes may be there already, and edge-triggered readiness is only
        // reported for changes, so waiting first could wait for an edge that has passed.
        const ssize_t n = ::recv(fd, buffer, size, 0);
        if (n >= 0) return n;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
        // Nothing there: park this fiber (the carrier runs the others) until the socket may be
        // readable. A wake-up may be spurious; the retried recv() decides.
        if (!wait_ready(fd, Direction::read, deadline)) {
            errno = ETIMEDOUT;
            return -1;
        }
    }
}

bool write_all(int fd, const char* data, std::size_t size, Deadline deadline) {
    std::size_t sent = 0;
    while (sent < size) {
        // MSG_NOSIGNAL: a peer that is gone makes send() fail with EPIPE instead of raising
        // SIGPIPE, whose default action ends the whole process.
        const ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
        // The socket's send buffer is full: the peer reads slower than we write.
        if (!wait_ready(fd, Direction::write, deadline)) {
            errno = ETIMEDOUT;
            return false;
        }
    }
    return true;
}

std::optional<std::string> LineReader::read_line(Deadline deadline) {
    for (;;) {
        const auto end = buffer_.find('\n');
        if (end != std::string::npos) {
            std::string line = buffer_.substr(0, end);
            buffer_.erase(0, end + 1);
            return line;
        }
        if (buffer_.size() > max_line)
            throw LineTooLong("a line of more than " + std::to_string(max_line) + " bytes");
        char chunk[4096];
        const ssize_t n = read_some(fd_, chunk, sizeof chunk, deadline);
        if (n == 0) return std::nullopt;
        if (n < 0) throw std::system_error(errno, std::generic_category(), "read_line");
        buffer_.append(chunk, static_cast<std::size_t>(n));
    }
}

int serve_echo_client(int fd, std::chrono::milliseconds idle_timeout) {
    LineReader reader(fd);
    int answered = 0;
    try {
        // Each wait for the next line is a fresh idle_timeout, as a keep-alive wait is.
        while (auto line = reader.read_line(deadline_after(idle_timeout))) {
            if (*line == "bye") break;
            const std::string answer = "echo: " + *line + "\n";
            if (!write_all(fd, answer.data(), answer.size(), deadline_after(idle_timeout))) break;
            ++answered;
        }
    } catch (const std::system_error&) {
        // Silent for too long, or the connection failed: this client is done.
    } catch (const LineTooLong&) {
        // A client that sends endless lines is done too.
    }
    return answered;
}
