#include "lessons/03-connector/fiber_io.hpp"

#include <cerrno>
#include <poll.h>

namespace {

// The thread-blocking wait, for threads that are not carriers.
bool poll_ready(int fd, Direction direction, Deadline deadline) {
    pollfd request{fd, static_cast<short>(direction == Direction::read ? POLLIN : POLLOUT), 0};
    for (;;) {
        const int timeout_ms = timeout_ms_until(deadline);
        if (timeout_ms == 0) return false;
        const int ready = ::poll(&request, 1, timeout_ms);
        if (ready > 0) return true; // readable, writable, hung up or failed: the syscall will say
        if (ready == 0 && std::chrono::steady_clock::now() >= deadline) return false;
        if (ready < 0 && errno != EINTR) return true; // let the caller's syscall report it
        // Interrupted, or a wait capped at ~24.8 days ended short of the deadline: wait again.
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
    const auto now = std::chrono::steady_clock::now();
    // now + timeout would overflow the clock's nanoseconds for absurd timeouts (~292 years from
    // the clock's start): a deadline that far away is no deadline.
    if (timeout >= std::chrono::duration_cast<std::chrono::milliseconds>(no_deadline - now))
        return no_deadline;
    return now + timeout;
}
