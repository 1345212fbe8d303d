#include "http_client.hpp"

#include <cerrno>
#include <cstring>
#include <strings.h>

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
            while (begin < head.size() && head[begin] == ' ') ++begin;
            return head.substr(begin, head.find("\r\n", begin) - begin);
        }
    }
    return "";
}

} // namespace

HttpClientConnection::HttpClientConnection(const std::string& host, int port, Deadline deadline)
    : host_header_(host + ":" + std::to_string(port)) {
    int fd = -1;
    try {
        fd = FiberSocket::connect_to(host, port, deadline);
    } catch (const std::runtime_error& e) {
        const bool timed_out = std::strstr(e.what(), "timed out") != nullptr;
        throw HttpClientError(timed_out ? Kind::connect_timeout : Kind::transport, e.what());
    }
    socket_ = std::make_unique<FiberSocket>(fd);
}

void HttpClientConnection::fill_to(std::size_t size, Deadline deadline) {
    char chunk[4096];
    while (buffer_.size() < size) {
        const ssize_t n = socket_->receive(chunk, sizeof chunk, deadline);
        if (n > 0) {
            buffer_.append(chunk, static_cast<std::size_t>(n));
        } else if (n == 0) {
            throw HttpClientError(Kind::transport, "the server closed the connection");
        } else if (errno == ETIMEDOUT) {
            throw HttpClientError(Kind::response_timeout, "no response before the deadline");
        } else {
            throw HttpClientError(Kind::transport, std::strerror(errno));
        }
    }
}

HttpResponse HttpClientConnection::get(const std::string& path, Deadline deadline) {
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + host_header_ + "\r\n\r\n";
    if (!socket_->send_all(request.data(), request.size(), deadline)) {
        if (errno == ETIMEDOUT)
            throw HttpClientError(Kind::response_timeout, "could not send before the deadline");
        throw HttpClientError(Kind::transport, std::strerror(errno));
    }
    std::size_t head_end;
    while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos)
        fill_to(buffer_.size() + 1, deadline);
    const std::string head = buffer_.substr(0, head_end + 2);

    HttpResponse response;
    if (head.compare(0, 7, "HTTP/1.") != 0 || head.size() < 12)
        throw HttpClientError(Kind::transport, "not an HTTP response");
    response.status = std::atoi(head.c_str() + 9);
    const std::string length = header_value(head, "Content-Length");
    const std::size_t body_size = length.empty() ? 0 : std::stoul(length);
    fill_to(head_end + 4 + body_size, deadline);
    response.body = buffer_.substr(head_end + 4, body_size);
    buffer_.erase(0, head_end + 4 + body_size);
    response.keep_alive = ::strcasecmp(header_value(head, "Connection").c_str(), "close") != 0;
    return response;
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
