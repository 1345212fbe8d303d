#include "lessons/instruments/client/http_client.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <boost/fiber/operations.hpp>
#include <cerrno>
#include <cstring>
#include <sys/socket.h>

namespace {

using Kind = HttpClientError::Kind;

// A read this size at most. The stack of a load tool's fiber is 64 KiB: 4 KiB of it is fine.
constexpr std::size_t read_chunk = 4096;

} // namespace

HttpClientConnection::HttpClientConnection(const std::string& host, int port, int fd)
    : socket_(std::make_unique<FiberSocket>(fd)), host_header_(host + ":" + std::to_string(port)) {
}

std::unique_ptr<HttpClientConnection> HttpClientConnection::open(const std::string& host, int port,
                                                                 Deadline deadline,
                                                                 HttpClientFailure& failure) {
    std::string error;
    const int fd = FiberSocket::try_connect(host, port, deadline, error);
    if (fd < 0) {
        failure = {errno == ETIMEDOUT ? Kind::connect_timeout : Kind::transport, error};
        return nullptr;
    }
    return std::unique_ptr<HttpClientConnection>(new HttpClientConnection(host, port, fd));
}

HttpClientConnection::HttpClientConnection(const std::string& host, int port, Deadline deadline)
    : host_header_(host + ":" + std::to_string(port)) {
    HttpClientFailure failure;
    std::unique_ptr<HttpClientConnection> opened = open(host, port, deadline, failure);
    if (!opened) throw HttpClientError(failure.kind, failure.what);
    socket_ = std::move(opened->socket_);
}

bool HttpClientConnection::read_response(ResponseParser& parser, Deadline deadline,
                                         HttpClientFailure& failure) {
    char chunk[read_chunk];
    for (;;) {
        // room(): never a byte past a limit, nor (once the head is read) past the response.
        const ssize_t n = socket_->receive(chunk, std::min(sizeof chunk, parser.room()), deadline);
        if (n < 0) {
            failure = errno == ETIMEDOUT ? HttpClientFailure{Kind::response_timeout,
                                                             "no response before the deadline"}
                                         : HttpClientFailure{Kind::transport, std::strerror(errno)};
            return false;
        }
        if (n == 0) {
            parser.end_of_stream();
        } else if (parser.feed({chunk, static_cast<std::size_t>(n)}) <
                   static_cast<std::size_t>(n)) {
            // Bytes after the response: whatever they are, the next response is not among them.
            parser.response().keep_alive = false;
        }
        if (parser.state() == ResponseParser::State::complete) return true;
        if (parser.state() == ResponseParser::State::refused) {
            failure = {parser.over_budget() ? Kind::over_budget : Kind::transport, parser.error()};
            return false;
        }
        // A receive() waits with the deadline, but a server whose bytes never stop coming never
        // makes it wait: the deadline is checked here too, and such a flood never parks this
        // fiber, so it lets the carrier's other fibers run between reads.
        if (std::chrono::steady_clock::now() >= deadline) {
            failure = {Kind::response_timeout, "no response before the deadline"};
            return false;
        }
        if (Reactor::current() != nullptr) boost::this_fiber::yield();
    }
}

HttpResponse HttpClientConnection::get(const std::string& path, Deadline deadline) {
    HttpResponse response;
    HttpClientFailure failure;
    if (!try_get(path, deadline, response, failure))
        throw HttpClientError(failure.kind, failure.what);
    return response;
}

bool HttpClientConnection::try_get(const std::string& path, Deadline deadline,
                                   HttpResponse& response, HttpClientFailure& failure,
                                   const ResponseLimits& limits) {
    if (!usable_) {
        failure = {Kind::transport, "this connection failed or was closed before: open another"};
        return false;
    }
    usable_ = false; // until a whole response shows the connection may serve another
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + host_header_ + "\r\n\r\n";
    if (!socket_->send_all(request.data(), request.size(), deadline)) {
        failure = errno == ETIMEDOUT ? HttpClientFailure{Kind::response_timeout,
                                                         "could not send before the deadline"}
                                     : HttpClientFailure{Kind::transport, std::strerror(errno)};
        return false;
    }
    ResponseParser parser(limits.max_head_bytes, limits.max_body_bytes, limits.budget);
    if (!read_response(parser, deadline, failure)) return false;
    response = std::move(parser.response());
    usable_ = response.keep_alive;
    return true;
}

bool HttpClientConnection::still_open() {
    if (!usable_) return false;
    char byte = 0;
    const ssize_t n = ::recv(socket_->fd(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    // 0: the server closed it; > 0: it spoke unasked (e.g. a 408 before closing); -1 with
    // EAGAIN: nothing to read, the normal state of an idle open connection.
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

void split_url(const std::string& url, std::string& host, int& port, std::string& path) {
    const std::string scheme = "http://";
    if (url.compare(0, scheme.size(), scheme) != 0)
        throw std::invalid_argument("'" + url + "' does not start with http://");
    const std::size_t slash = url.find('/', scheme.size());
    const std::string authority = url.substr(scheme.size(), slash - scheme.size());
    path = slash == std::string::npos ? "/" : url.substr(slash);
    const std::size_t colon = authority.find(':');
    host = authority.substr(0, colon);
    if (host == "localhost") host = "127.0.0.1";
    in_addr address{};
    if (::inet_pton(AF_INET, host.c_str(), &address) != 1)
        throw std::invalid_argument("'" + host + "' is not an IPv4 address (no names: looking " +
                                    "one up would block the carrier)");
    port = 80;
    if (colon == std::string::npos) return;
    const std::string digits = authority.substr(colon + 1);
    if (digits.empty() || digits.size() > 5 ||
        digits.find_first_not_of("0123456789") != std::string::npos || std::stoi(digits) < 1 ||
        std::stoi(digits) > 65535)
        throw std::invalid_argument("'" + url + "' has no port from 1 to 65535");
    port = std::stoi(digits);
}
