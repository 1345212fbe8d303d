// The httplib::Stream cpp-httplib parses requests from and writes responses to, over a
// FiberSocket. This is how cpp-httplib's parser and router run on fibers: every read or write
// that would block parks the fiber instead.
//
// What cpp-httplib's Server::process_request needs from a Stream, and how we provide it:
//  * It reads the request line and headers one byte at a time: we read the socket in large
//    chunks into a buffer and serve bytes from it. The buffer belongs to the connection, not the
//    request, so bytes of a pipelined next request are kept for it.
//  * read() must enforce the read timeout itself: each read that has to wait gets `read_timeout`.
//  * write() must never return 0 (the library would loop forever): it returns the size or -1.
//    Writes are gathered and sent by flush(), so a response leaves in one send() instead of two
//    (the library writes the head and the body separately).
#pragma once

#include "lessons/03-connector/fiber_socket.hpp"

#include <chrono>
#include <httplib.h>
#include <string>
#include <vector>

class FiberStream final : public httplib::Stream {
public:
    FiberStream(FiberSocket& socket, std::chrono::milliseconds read_timeout,
                std::chrono::milliseconds write_timeout);

    // httplib::Stream
    bool is_readable() const override;
    bool is_writable() const override { return !failed_; }
    ssize_t read(char* data, std::size_t size) override;
    ssize_t write(const char* data, std::size_t size) override;
    void get_remote_ip_and_port(std::string& ip, int& port) const override;
    void get_local_ip_and_port(std::string& ip, int& port) const override;
    socket_t socket() const override { return socket_.fd(); }

    // Sends what write() gathered. False when the peer is gone or the write timeout passed.
    bool flush();

    enum class Arrival { request, closed, timeout };
    // The keep-alive wait: parks until the first byte of the next request arrives (at once if
    // one is buffered already), the peer closes, or `deadline` passes.
    Arrival wait_for_request(Deadline deadline);

    enum class Head { complete, too_large, closed, timeout };
    // Reads until the buffer holds a whole request head (up to the blank line), at most
    // `max_bytes` of it, before `deadline`. On success head() shows it; nothing is consumed.
    Head read_head(std::size_t max_bytes, Deadline deadline);
    std::string head() const { return std::string(in_.data() + begin_, head_length_); }

    // Bytes received and not yet read: the start of a pipelined next request.
    bool has_buffered_input() const { return begin_ < end_; }

private:
    // Reads more bytes into the buffer: > 0 read, 0 peer closed, -1 error or timeout.
    ssize_t fill(Deadline deadline);

    FiberSocket& socket_;
    std::chrono::milliseconds read_timeout_;
    std::chrono::milliseconds write_timeout_;
    std::vector<char> in_; // received bytes live in [begin_, end_)
    std::size_t begin_ = 0, end_ = 0;
    std::size_t head_length_ = 0;
    std::string out_; // gathered by write(), sent by flush()
    bool failed_ = false;
};
