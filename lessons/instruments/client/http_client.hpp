// A minimal HTTP/1.1 client on lesson 03's fiber-aware sockets, the client side of the
// connector: one kept-alive connection, GET requests, bodies of a Content-Length (or up to the
// close). Each call parks only its fiber, so a carrier can run thousands of them at once.
//
// A server it calls may be broken or hostile, and none can make it wait, buffer or search
// without end: a call has one deadline, kept even while bytes keep coming; the response is
// framed by ResponseParser (http_response_parser.hpp) within its named limits, and what it
// cannot frame for certain fails the call and ends the connection, so the next response on it
// can never be read from the wrong place.
#pragma once

#include "lessons/03-connector/fiber_socket.hpp"
#include "lessons/instruments/client/http_response_parser.hpp" // HttpResponse, the limits

#include <memory>
#include <stdexcept>
#include <string>

// Why a request failed, by kind, so that a caller can count each kind apart. over_budget: the
// response would have passed the ResponseBudget the call was given (ResponseLimits).
struct HttpClientError : std::runtime_error {
    enum class Kind { connect_timeout, response_timeout, transport, over_budget };
    HttpClientError(Kind kind, const std::string& what) : std::runtime_error(what), kind(kind) {}
    Kind kind;
};

// The same, as a value, for the calls that report failures without throwing.
struct HttpClientFailure {
    HttpClientError::Kind kind = HttpClientError::Kind::transport;
    std::string what;
};

// What one call may read: its head and body at most (a client that knows what its server sends
// sizes them to it), and the budget it shares with other calls, if any.
struct ResponseLimits {
    std::size_t max_head_bytes = max_response_head_bytes;
    std::size_t max_body_bytes = max_response_body_bytes;
    ResponseBudget* budget = nullptr;
};

class HttpClientConnection {
public:
    // Connects to host:port (IPv4). Throws HttpClientError (connect_timeout or transport).
    HttpClientConnection(const std::string& host, int port, Deadline deadline);

    // Sends "GET path" and reads the whole response before `deadline`.
    // Throws HttpClientError (response_timeout or transport); the connection is then unusable:
    // every later call fails at once, and still_open() says false.
    HttpResponse get(const std::string& path, Deadline deadline);

    // The same two without exceptions: null / false, with `failure` saying why. For fibers whose
    // failures are routine (the spike records thousands): an exception thrown on a fiber stack is
    // what AddressSanitizer mistracks (lessons/tools/test says why), so these keep them off it.
    static std::unique_ptr<HttpClientConnection>
    open(const std::string& host, int port, Deadline deadline, HttpClientFailure& failure);
    bool try_get(const std::string& path, Deadline deadline, HttpResponse& response,
                 HttpClientFailure& failure, const ResponseLimits& limits = {});

    // False when the server has closed this kept-alive connection while it sat idle (or sent
    // bytes nobody asked for): a request sent on it would fail without reaching the server.
    // Looks without waiting. A close that races with the next request still fails that request.
    bool still_open();

    // A kept connection between calls: set_aside() takes its socket off its carrier's reactor
    // (call it on that carrier), so that any thread may close it, a timer that closes idle
    // connections included; take_up() puts it on the calling carrier's reactor before the next
    // call (FiberSocket::leave_reactor says why).
    void set_aside() { socket_->leave_reactor(); }
    void take_up() { socket_->join_reactor(); }

private:
    HttpClientConnection(const std::string& host, int port, int fd);

    // Reads one response into `parser` before `deadline`, or fails.
    bool read_response(ResponseParser& parser, Deadline deadline, HttpClientFailure& failure);

    std::unique_ptr<FiberSocket> socket_;
    std::string host_header_;
    // False after a failure, a response that ends the connection, or bytes nobody asked for.
    bool usable_ = true;
};

// Splits "http://127.0.0.1:8080/benchmark" into host, port and path, or throws
// std::invalid_argument. Only http://, a numeric IPv4 host ("localhost" is 127.0.0.1) and a port
// from 1 to 65535 (80 when none is given): our tools talk to loopback.
void split_url(const std::string& url, std::string& host, int& port, std::string& path);
