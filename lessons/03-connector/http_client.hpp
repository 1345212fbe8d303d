// A minimal HTTP/1.1 client on fiber-aware sockets: one kept-alive connection, GET requests,
// Content-Length bodies. Enough for our own load tools (the crowd of lesson 03, the spike driver
// of lesson 05), which run thousands of these, one per fiber, on a couple of carriers.
#pragma once

#include "fiber_socket.hpp"

#include <memory>
#include <stdexcept>
#include <string>

struct HttpResponse {
    int status = 0;
    std::string body;
    bool keep_alive = true; // false when the server answered "Connection: close"
};

// Why a request failed. The spike driver records each kind with its own sentinel.
struct HttpClientError : std::runtime_error {
    enum class Kind { connect_timeout, response_timeout, transport };
    HttpClientError(Kind kind, const std::string& what) : std::runtime_error(what), kind(kind) {}
    Kind kind;
};

class HttpClientConnection {
public:
    // Connects to host:port (IPv4). Throws HttpClientError (connect_timeout or transport).
    HttpClientConnection(const std::string& host, int port, Deadline deadline);

    // Sends "GET path" and reads the whole response before `deadline`.
    // Throws HttpClientError (response_timeout or transport); the connection is then unusable.
    HttpResponse get(const std::string& path, Deadline deadline);

private:
    // Reads until `buffer_` holds `size` bytes.
    void fill_to(std::size_t size, Deadline deadline);

    std::unique_ptr<FiberSocket> socket_;
    std::string host_header_;
    std::string buffer_;
};

// Splits "http://127.0.0.1:8080/benchmark" into host, port and path, or throws
// std::invalid_argument. Only http:// and numeric IPv4 hosts: our tools talk to loopback.
void split_url(const std::string& url, std::string& host, int& port, std::string& path);
