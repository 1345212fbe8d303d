// Fuzz target: the request-head guard against cpp-httplib's own parser, a differential test.
//
// The input is what a client sends. Its head (up to the first CRLF CRLF, as FiberStream::read_head
// cuts it) goes to check_request_head. Whatever the guard admits then goes, with the bytes after
// it, to the real parser, HttpApp's process_request (the call the connector makes), on a fiber
// with a connection fiber's stack. For an admitted head the parser must
//  1. not overflow that stack: std::regex on the Range header and the router's patterns recurse,
//     the stack ends in a guard page, and an overflow is a crash the fuzzer reports;
//  2. see the request line and the headers that RFC 9112 reads in those bytes (split at CRLF,
//     the name before the first ':', the value trimmed), which is what the guard checked;
//  3. read the head and not one byte more: no body, nothing of a next request.
// A head without its empty line must never be admitted. Findings abort with the story.
#include "lessons/02-fibers/fiber_stack.hpp"
#include "lessons/03-connector/connector.hpp"
#include "lessons/03-connector/guard/request_guard.hpp"
#include "lessons/03-connector/http_app.hpp"

#include <boost/fiber/fiber.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

namespace {

// An httplib::Stream over bytes in memory: what the client sent, and what the server answers.
class MemoryStream final : public httplib::Stream {
public:
    explicit MemoryStream(std::string_view input) : input_(input) {}
    bool is_readable() const override { return true; }
    bool is_writable() const override { return true; }
    ssize_t read(char* data, std::size_t size) override {
        const std::size_t count = std::min(size, input_.size() - consumed_);
        std::memcpy(data, input_.data() + consumed_, count);
        consumed_ += count;
        return static_cast<ssize_t>(count);
    }
    ssize_t write(const char* data, std::size_t size) override {
        output_.append(data, size);
        return static_cast<ssize_t>(size);
    }
    void get_remote_ip_and_port(std::string& ip, int& port) const override {
        ip = "127.0.0.1";
        port = 40000;
    }
    void get_local_ip_and_port(std::string& ip, int& port) const override {
        ip = "127.0.0.1";
        port = 8080;
    }
    socket_t socket() const override { return 3; }

    std::size_t consumed() const { return consumed_; }
    const std::string& output() const { return output_; }

private:
    std::string_view input_;
    std::size_t consumed_ = 0;
    std::string output_;
};

// HttpApp::process with a look at the request once the library has parsed it (its
// setup_request hook runs after the request line, the headers and the Range header are read).
struct ProbedApp : HttpApp {
    ProbedApp() {
        Get("/hello", [](const httplib::Request&, httplib::Response& res) {
            res.set_content(std::string(100, 'h'), "text/plain"); // long enough for ranges
        });
    }
    bool process(httplib::Stream& stream, const std::function<void(httplib::Request&)>& seen) {
        bool closed = false;
        return process_request(stream, false, closed, seen);
    }
};

[[noreturn]] void finding(std::string_view head, const std::string& what) {
    std::fprintf(stderr, "\nFINDING: %s\n  head the guard admitted: %s\n", what.c_str(),
                 spelled_out(head).c_str());
    std::abort();
}

// The head as RFC 9112 reads it (the guard admitted it, so every line ends in CRLF): the
// request line's three parts, and the headers as cpp-httplib should store them.
struct Reading {
    std::string method, target, version;
    httplib::Headers headers;
    std::string range; // the raw Range value, if any
};

Reading read_as_rfc(std::string_view head) {
    Reading reading;
    for (std::size_t begin = 0, end; (end = head.find("\r\n", begin)) != begin; begin = end + 2) {
        const std::string_view line = head.substr(begin, end - begin); // empty: the head's end
        if (begin == 0) {
            const std::size_t space1 = line.find(' '), space2 = line.rfind(' ');
            reading.method = line.substr(0, space1);
            reading.target = line.substr(space1 + 1, space2 - space1 - 1);
            reading.version = line.substr(space2 + 1);
            continue;
        }
        const std::size_t colon = line.find(':');
        const std::string name(line.substr(0, colon));
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
            value.remove_prefix(1);
        while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
            value.remove_suffix(1);
        if (strcasecmp(name.c_str(), "Range") == 0 && reading.range.empty())
            reading.range = value; // cpp-httplib acts on the first
        // cpp-httplib drops a header with an empty value and percent-decodes the others.
        if (!value.empty())
            reading.headers.emplace(name, httplib::detail::decode_url(std::string(value), false));
    }
    // ...and adds the peer's and its own address after the client's headers.
    reading.headers.emplace("REMOTE_ADDR", "127.0.0.1");
    reading.headers.emplace("REMOTE_PORT", "40000");
    reading.headers.emplace("LOCAL_ADDR", "127.0.0.1");
    reading.headers.emplace("LOCAL_PORT", "8080");
    return reading;
}

std::string listed(const httplib::Headers& headers) {
    std::string out;
    for (const auto& [name, value] : headers)
        out += "\n    " + spelled_out(name) + ": " + spelled_out(value);
    return out;
}

void check_admitted(std::string_view input, std::string_view head, const GuardLimits& limits) {
    const Reading expected = read_as_rfc(head);
    if (expected.range.size() > limits.max_range_bytes)
        finding(head, "a Range value of " + std::to_string(expected.range.size()) +
                          " bytes reached the library");

    ProbedApp app;
    MemoryStream stream(input);
    bool parsed = false;
    Reading seen;
    // On a fiber with the connector's own stack size, as in production: an overflow crashes here.
    boost::fibers::fiber(std::allocator_arg, FiberStack(ConnectorOptions{}.fiber_stack_size), [&] {
        app.process(stream, [&](httplib::Request& request) {
            parsed = true;
            seen = {request.method, request.target, request.version, request.headers, {}};
        });
    }).join();

    if (!parsed) {
        // The library may still refuse a Range it cannot parse (416): that is the Range the guard
        // saw, or the two disagree.
        httplib::Ranges ranges;
        const bool refused_range =
            stream.output().rfind("HTTP/1.1 416 ", 0) == 0 && !expected.range.empty() &&
            !httplib::detail::parse_range_header(httplib::detail::decode_url(expected.range, false),
                                                 ranges);
        if (!refused_range)
            finding(head, "cpp-httplib refused a head the guard admitted; it answered: " +
                              spelled_out(stream.output().substr(0, stream.output().find('\r'))));
    } else {
        if (seen.method != expected.method || seen.target != expected.target ||
            seen.version != expected.version)
            finding(head, "request line: cpp-httplib read '" + spelled_out(seen.method) + "' '" +
                              spelled_out(seen.target) + "' '" + spelled_out(seen.version) + "'");
        if (seen.headers != expected.headers)
            finding(head, "headers: cpp-httplib read" + listed(seen.headers) +
                              "\n  RFC 9112 reads" + listed(expected.headers));
    }
    if (stream.consumed() != head.size())
        finding(head, "cpp-httplib read " + std::to_string(stream.consumed()) +
                          " bytes of a head of " + std::to_string(head.size()));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string input(reinterpret_cast<const char*>(data), size);
    const GuardLimits limits;
    const std::size_t blank = input.find("\r\n\r\n");
    if (blank == std::string::npos) {
        // The connector would wait for the rest; the guard, shown it anyway, must refuse it.
        if (!check_request_head(input, limits)) finding(input, "admitted a head with no end");
        return 0;
    }
    const std::string head = input.substr(0, blank + 4);
    if (auto refusal = check_request_head(head, limits)) {
        if (refusal->status < 400 || refusal->status > 499 || refusal->reason.empty())
            finding(head, "a refusal that is not a 4xx with a reason");
        return 0;
    }
    check_admitted(input, head, limits);
    return 0;
}
