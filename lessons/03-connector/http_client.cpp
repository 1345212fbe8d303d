#include "http_client.hpp"

#include <cerrno>
#include <cstring>
#include <strings.h>
#include <sys/socket.h>

namespace {

using Kind = HttpClientError::Kind;

// The value of header `name` in a response head, or "" (names compare case-insensitively).
std::string header_value(const std::string& head, const char* name) {
    const std::size_t length = std::strlen(name);
    for (std::size_t at = head.find("\r\n"); at != std::string::npos && at + 2 < head.size();
         at = head.find("\r\n", at + 2)) {
        const char* line = head.data() + at + 2;
        if (::strncasecmp(line, name, length) == 0 && line[length] == ':') {
            std::size_t begin = at + 2 + length + 1;
            while (begin < head.size() && head[begin] == ' ')
                ++begin;
            return head.substr(begin, head.find("\r\n", begin) - begin);
        }
    }
    return "";
}

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

bool HttpClientConnection::fill_to(std::size_t size, Deadline deadline,
                                   HttpClientFailure& failure) {
    char chunk[4096];
    while (buffer_.size() < size) {
        const ssize_t n = socket_->receive(chunk, sizeof chunk, deadline);
        if (n > 0) {
            buffer_.append(chunk, static_cast<std::size_t>(n));
        } else if (n == 0) {
            failure = {Kind::transport, "the server closed the connection"};
            return false;
        } else if (errno == ETIMEDOUT) {
            failure = {Kind::response_timeout, "no response before the deadline"};
            return false;
        } else {
            failure = {Kind::transport, std::strerror(errno)};
            return false;
        }
    }
    return true;
}

HttpResponse HttpClientConnection::get(const std::string& path, Deadline deadline) {
    HttpResponse response;
    HttpClientFailure failure;
    if (!try_get(path, deadline, response, failure))
        throw HttpClientError(failure.kind, failure.what);
    return response;
}

bool HttpClientConnection::try_get(const std::string& path, Deadline deadline,
                                   HttpResponse& response, HttpClientFailure& failure) {
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + host_header_ + "\r\n\r\n";
    if (!socket_->send_all(request.data(), request.size(), deadline)) {
        failure = errno == ETIMEDOUT ? HttpClientFailure{Kind::response_timeout,
                                                         "could not send before the deadline"}
                                     : HttpClientFailure{Kind::transport, std::strerror(errno)};
        return false;
    }
    std::size_t head_end;
    while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos)
        if (!fill_to(buffer_.size() + 1, deadline, failure)) return false;
    const std::string head = buffer_.substr(0, head_end + 2);

    if (head.compare(0, 7, "HTTP/1.") != 0 || head.size() < 12) {
        failure = {Kind::transport, "not an HTTP response"};
        return false;
    }
    response.status = std::atoi(head.c_str() + 9);
    const std::string length = header_value(head, "Content-Length");
    char* length_end = nullptr;
    const unsigned long body_size =
        length.empty() ? 0 : std::strtoul(length.c_str(), &length_end, 10);
    if (!length.empty() && (length_end == length.c_str() || *length_end != '\0')) {
        failure = {Kind::transport, "Content-Length '" + length + "' is not a number"};
        return false;
    }
    if (!fill_to(head_end + 4 + body_size, deadline, failure)) return false;
    response.body = buffer_.substr(head_end + 4, body_size);
    buffer_.erase(0, head_end + 4 + body_size);
    response.keep_alive = ::strcasecmp(header_value(head, "Connection").c_str(), "close") != 0;
    return true;
}

bool HttpClientConnection::still_open() {
    if (!buffer_.empty()) return false;
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
    port = 80;
    if (colon != std::string::npos) {
        try {
            port = std::stoi(authority.substr(colon + 1));
        } catch (const std::exception&) {
            throw std::invalid_argument("'" + url + "' has no valid port");
        }
    }
}
