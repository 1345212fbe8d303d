// A non-blocking TCP socket whose waits are fiber-aware (see fiber_io.hpp).
//
// Owns the descriptor. Created on a carrier, it registers with that carrier's reactor for its
// whole life, so waiting costs no syscall; used from another thread it falls back to poll().
// Every call takes a deadline and reports a timeout as an error, so no caller can hang forever.
#pragma once

#include "lessons/03-connector/fiber_io.hpp"

#include <cstddef>
#include <string>
#include <sys/types.h>

class FiberSocket {
public:
    // Takes ownership of a connected socket (made non-blocking here if it is not already).
    explicit FiberSocket(int fd);
    ~FiberSocket();
    FiberSocket(const FiberSocket&) = delete;
    FiberSocket& operator=(const FiberSocket&) = delete;

    // Connects to host:port (an IPv4 address): the descriptor, or -1 with `error` saying why
    // (errno is ETIMEDOUT when `deadline` passed first). It throws nothing: an exception thrown
    // on a fiber stack is what AddressSanitizer mistracks (lessons/tools/test says why).
    static int try_connect(const std::string& host, int port, Deadline deadline,
                           std::string& error);

    // Receives up to `size` bytes: > 0 bytes read, 0 the peer closed, -1 an error (errno set;
    // ETIMEDOUT when `deadline` passed first).
    ssize_t receive(char* data, std::size_t size, Deadline deadline);

    // Sends some of `size` bytes: > 0 bytes sent, -1 an error (errno set; ETIMEDOUT when
    // `deadline` passed before the peer took any).
    ssize_t send_some(const char* data, std::size_t size, Deadline deadline);

    // Sends all `size` bytes before `deadline`, or returns false (errno set).
    bool send_all(const char* data, std::size_t size, Deadline deadline);

    // Waits until bytes are waiting to be read or the peer has closed (the next receive() tells
    // which), without consuming anything; false when `deadline` passed first. Like wait_ready,
    // it may return true spuriously.
    bool wait_readable(Deadline deadline);

    int fd() const { return watch_.fd; }

    // Asks the fiber parked reading this socket, if any, to give back the stack pages it does
    // not use while it waits (Reactor::lighten_reader). Call it on the socket's carrier.
    void lighten_reader() {
        if (watch_.reactor != nullptr) watch_.reactor->lighten_reader(watch_);
    }

    // For a connection kept idle between uses (a client's kept connection): leave_reactor()
    // unregisters it from its carrier's reactor, on that carrier, after which any thread may
    // close it (a timer that closes idle connections: the reactor holds no pointer to it any
    // more); join_reactor() registers it with the calling carrier's reactor again, if the caller
    // runs on one, before it is used. Readiness that came meanwhile is reported on joining.
    void leave_reactor();
    void join_reactor();

    // Addresses, looked up once: cpp-httplib asks for both on every request.
    void remote_address(std::string& ip, int& port);
    void local_address(std::string& ip, int& port);

private:
    Watch watch_;
    // The last receive() got fewer bytes than it asked for (or none yet: EAGAIN), so the kernel
    // held no more then; any byte since has raised a new edge, and wait_readable() can wait for
    // it without first asking the kernel (a recv with MSG_PEEK: one syscall per request saved).
    bool drained_ = false;
    std::string remote_ip_, local_ip_;
    int remote_port_ = -1, local_port_ = -1;
};
