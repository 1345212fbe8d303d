// Fiber-aware waits for sockets: the one primitive every fiber-friendly I/O call here is built on.
//
// The pattern is always: try the non-blocking syscall; on EAGAIN, wait_ready(); try again.
// On a carrier thread, wait_ready parks only the calling fiber and the carrier runs others
// meanwhile. On any other thread (the platform executor's threads in lesson 05, a test's main
// thread) there is nobody else to run, so it blocks that thread in poll(): same code, both worlds.
#pragma once

#include "lessons/03-connector/reactor.hpp"

// Waits until `fd` may be ready for `direction`, or `deadline` passes (false on timeout).
// May return true spuriously; the caller's retried syscall decides.
bool wait_ready(int fd, Direction direction, Deadline deadline);

// The same for a socket registered with a carrier's reactor (a connection): no syscall to
// register, on the carrier that owns it.
bool wait_ready(Watch& watch, Direction direction, Deadline deadline);

// Deadline `timeout` from now; a zero or negative timeout means "no deadline", and so does one
// too far away for the clock to represent.
Deadline deadline_after(std::chrono::milliseconds timeout);
