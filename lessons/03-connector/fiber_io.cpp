#include "fiber_io.hpp"

#include <cerrno>
#include <poll.h>

namespace {

// The thread-blocking wait, for threads that are not carriers.
bool poll_ready(int fd, Direction direction, Deadline deadline) {
    pollfd request{fd, static_cast<short>(direction == Direction::read ? POLLIN : POLLOUT), 0};
    for (;;) {
        int timeout_ms = -1;
        if (deadline != no_deadline) {
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) return false;
            timeout_ms = static_cast<int>(left.count());
        }
        const int ready = ::poll(&request, 1, timeout_ms);
        if (ready > 0) return true; // readable, writable, hung up or failed: the syscall will say
        if (ready == 0) return false;
        if (errno != EINTR) return true; // let the caller's syscall report the problem
    }
}

} // namespace

bool wait_ready(int fd, Direction direction, Deadline deadline) {
    if (Reactor* reactor = Reactor::current()) return reactor->wait_once(fd, direction, deadline);
    return poll_ready(fd, direction, deadline);
}

bool wait_ready(Watch& watch, Direction direction, Deadline deadline) {
    Reactor* reactor = Reactor::current();
    if (reactor == nullptr) return poll_ready(watch.fd, direction, deadline);
    if (reactor == watch.reactor) return reactor->wait(watch, direction, deadline);
    return reactor->wait_once(watch.fd, direction, deadline); // a fiber of another carrier
}

Deadline deadline_after(std::chrono::milliseconds timeout) {
    if (timeout.count() <= 0) return no_deadline;
    return std::chrono::steady_clock::now() + timeout;
}
