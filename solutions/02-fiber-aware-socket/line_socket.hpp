// Exercise 02: fiber-aware reads and writes on a socket.
//
// Lesson 03's connector serves every connection on a fiber, and every socket wait there parks the
// fiber: try the non-blocking syscall; when it says EAGAIN ("nothing now"), wait_ready() until the
// socket may be ready; try again. Here you write that pattern yourself, for a small line protocol.
//
// The descriptors passed in are non-blocking sockets (O_NONBLOCK): recv() and send() never wait,
// they fail with EAGAIN instead. Waiting is your job — with wait_ready from fiber_io.hpp.
#pragma once

#include "lessons/03-connector/fiber_io.hpp"

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <sys/types.h>

// ---- do not change: the graded tests use these declarations ----

// Task 1. Reads up to `size` bytes: returns how many (> 0), 0 when the peer closed, or -1 with
// errno set on an error — ETIMEDOUT when `deadline` passed before any byte arrived. Parks the
// calling fiber while nothing is there.
ssize_t read_some(int fd, char* buffer, std::size_t size, Deadline deadline);

// Task 2. Sends all `size` bytes before `deadline`: true when done, false with errno set
// otherwise (ETIMEDOUT at the deadline, EPIPE when the peer is gone). Never kills the process.
bool write_all(int fd, const char* data, std::size_t size, Deadline deadline);

// Thrown by LineReader when a line is longer than its limit.
class LineTooLong : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Task 3. Reads '\n'-terminated lines from a socket.
class LineReader {
public:
    // A line longer than this is refused: a peer must not make us buffer without end.
    static constexpr std::size_t max_line = 4096;

    explicit LineReader(int fd) : fd_(fd) {}

    // The next line, without its '\n'. nullopt when the peer closed the connection (a last line
    // without '\n' is dropped). Throws std::system_error with ETIMEDOUT when `deadline` passes
    // first, std::system_error for other socket errors, and LineTooLong when more than max_line
    // bytes arrive without a '\n'. Bytes after the line stay for the next call.
    std::optional<std::string> read_line(Deadline deadline);

    // ---- end of do not change ----
private:
    int fd_;
    // Bytes read from the socket and not yet returned: recv() takes whatever has arrived, which
    // may end in the middle of a line or hold several.
    std::string buffer_;
};

// ---- do not change: the graded tests use these declarations ----

// Task 4. Serves one client of the echo protocol until it says "bye" or goes away: for each line
// `text` it answers "echo: text\n". A client silent for `idle_timeout` is dropped. Returns how
// many lines it answered. Closes nothing: the caller owns `fd`.
int serve_echo_client(int fd, std::chrono::milliseconds idle_timeout);
