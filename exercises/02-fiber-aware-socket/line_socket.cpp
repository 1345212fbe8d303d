#include "line_socket.hpp"

#include <cerrno>
#include <sys/socket.h>
#include <system_error>

ssize_t read_some(int fd, char* buffer, std::size_t size, Deadline deadline) {
    // TODO(ex2) task 1: recv(); on EAGAIN, wait_ready(fd, Direction::read, deadline) and retry.
    (void)fd;
    (void)buffer;
    (void)size;
    (void)deadline;
    errno = ENOSYS;
    return -1;
}

bool write_all(int fd, const char* data, std::size_t size, Deadline deadline) {
    // TODO(ex2) task 2: send() until every byte is out; wait_ready for writing on EAGAIN.
    (void)fd;
    (void)data;
    (void)size;
    (void)deadline;
    errno = ENOSYS;
    return false;
}

std::optional<std::string> LineReader::read_line(Deadline deadline) {
    // TODO(ex2) task 3: read_some() into a buffer that belongs to this reader until it holds a
    // '\n'; return the line and keep the rest.
    (void)deadline;
    throw std::logic_error("TODO(ex2) task 3: LineReader::read_line is not written yet");
}

int serve_echo_client(int fd, std::chrono::milliseconds idle_timeout) {
    // TODO(ex2) task 4: read lines, answer "echo: <line>\n", stop at "bye" or when the client
    // leaves or stays silent for idle_timeout.
    (void)fd;
    (void)idle_timeout;
    throw std::logic_error("TODO(ex2) task 4: serve_echo_client is not written yet");
}
