// Tests of the request-head guard: first check_request_head on its own, byte by byte against
// what RFC 9112 allows in a request head, then a real Connector on loopback fed the crafted
// requests that walked past the guard when it split lines on CRLF and cpp-httplib on LF.
#include "lessons/03-connector/connector.hpp"
#include "lessons/03-connector/guard/request_guard.hpp"
#include "lessons/common/test_support.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <memory>

namespace {

using namespace std::chrono_literals;

// 0 when the guard admits the head, otherwise the status it refuses it with.
int guard_status(const std::string& head) {
    const auto refusal = check_request_head(head, GuardLimits{});
    return refusal ? refusal->status : 0;
}

std::string request_with(const std::string& header_lines) {
    return "GET /hello HTTP/1.1\r\n" + header_lines + "\r\n";
}

struct Case {
    const char* what;
    std::string head;
};

void require_refused(const Case& c, int status) {
    INFO(c.what << ": " << spelled_out(c.head));
    CHECK(guard_status(c.head) == status);
}

// "bytes=0-0,1-1,...": each range is valid, and the whole value overflows std::regex's recursion
// on a fiber stack (300 ranges are 2,185 bytes).
std::string many_ranges(int count) {
    std::string value = "bytes=0-0";
    for (int i = 1; i < count; ++i)
        value += "," + std::to_string(i) + "-" + std::to_string(i);
    return value;
}

// A Connector with one route, on a free port.
struct GuardedServer {
    HttpApp app;
    std::unique_ptr<Connector> connector;
    GuardedServer() {
        app.Get("/hello", [](const httplib::Request&, httplib::Response& res) {
            res.set_content("hello\n", "text/plain");
        });
        ConnectorOptions options;
        options.port = 0;
        connector = std::make_unique<Connector>(app, options);
        connector->start();
    }
    int port() const { return connector->port(); }
};

} // namespace

TEST_CASE("the guard admits well-formed request heads", "[lesson03][guard]") {
    const Case cases[] = {
        {"a plain GET", request_with("Host: x\r\n")},
        {"HTTP/1.0, no headers", "GET / HTTP/1.0\r\n\r\n"},
        {"optional whitespace around a value, a tab inside it",
         request_with("Host:x\r\nAccept: \t text/plain\t\r\nUser-Agent: a\tb\r\n")},
        {"an empty value", request_with("Host: x\r\nX-Empty:\r\n")},
        {"obs-text (bytes 0x80-0xff) in a value", request_with("X-Name: caf\xc3\xa9\r\n")},
        {"every token character in a name", request_with("!#$%&'*+-.^_`|~09azAZ: v\r\n")},
        {"a query", "GET /hello?name=a%20b&x=1 HTTP/1.1\r\nHost: x\r\n\r\n"},
        {"Content-Length zero on a GET", request_with("Content-Length: 0\r\n")},
        {"a POST without a body, said so", "POST /x HTTP/1.1\r\nContent-Length: 0\r\n\r\n"},
        {"a Range at the limit", request_with("Range: bytes=0-1\r\n")},
    };
    for (const auto& c : cases) {
        const auto refusal = check_request_head(c.head, GuardLimits{});
        INFO(c.what << ": " << spelled_out(c.head));
        INFO("refused: " << (refusal ? std::to_string(refusal->status) + " " + refusal->reason
                                     : std::string("no")));
        CHECK_FALSE(refusal.has_value());
    }
}

TEST_CASE("a bare LF or a bare CR ends no line: the guard refuses it", "[lesson03][guard]") {
    const Case cases[] = {
        {"a bare LF hides a Range line inside Host",
         request_with("Host: x\nRange: " + many_ranges(300) + "\r\n")},
        {"a bare LF hides Content-Length inside Host",
         "POST /hello HTTP/1.1\r\nHost: x\nContent-Length: 5\r\n\r\nhello"},
        {"a bare LF ends the request line", "GET /hello HTTP/1.1\nHost: x\r\n\r\n"},
        {"a bare LF ends a header line", request_with("Host: x\n")},
        {"a bare CR inside a value", request_with("Host: x\rRange: bytes=0-1\r\n")},
        {"a bare CR in the request line", "GET /hel\rlo HTTP/1.1\r\nHost: x\r\n\r\n"},
        {"a bare CR ends the head", "GET /hello HTTP/1.1\r\nHost: x\r\n\r\r\n\r\n"},
    };
    for (const auto& c : cases)
        require_refused(c, 400);
}

TEST_CASE("obs-fold continuation lines are refused", "[lesson03][guard]") {
    require_refused({"a space-folded value", request_with("X-Long: a\r\n b\r\n")}, 400);
    require_refused({"a tab-folded value", request_with("X-Long: a\r\n\tb\r\n")}, 400);
    require_refused({"a fold right after the request line", request_with(" Host: x\r\n")}, 400);
}

TEST_CASE("NUL and other control bytes are refused anywhere in the head", "[lesson03][guard]") {
    const Case cases[] = {
        {"NUL in a value", request_with(std::string("Host: a\0b\r\n", 11))},
        {"NUL in a name", request_with(std::string("Ho\0st: x\r\n", 10))},
        {"NUL in the target", std::string("GET /a\0b HTTP/1.1\r\n\r\n", 21)},
        {"ESC in a value", request_with("Host: a\x1b[31m\r\n")},
        {"DEL in a value", request_with("Host: a\x7f\r\n")},
        {"a vertical tab in a value", request_with("Host: a\vb\r\n")},
        {"a tab in the target", "GET /a\tb HTTP/1.1\r\n\r\n"},
        {"obs-text in the target", "GET /caf\xc3\xa9 HTTP/1.1\r\n\r\n"},
    };
    for (const auto& c : cases)
        require_refused(c, 400);
}

TEST_CASE("a field name must be a token followed at once by the colon", "[lesson03][guard]") {
    const Case cases[] = {
        {"a space before the colon", request_with("Host : x\r\n")},
        {"a tab before the colon", request_with("Host\t: x\r\n")},
        {"a space inside the name", request_with("Content Length: 5\r\n")},
        {"a separator in the name", request_with("X(Y): z\r\n")},
        {"an empty name", request_with(": z\r\n")},
        {"no colon at all", request_with("Host x\r\n")},
        {"a name cpp-httplib sets itself (spoofing the peer's address)",
         request_with("REMOTE_ADDR: 10.0.0.1\r\n")},
    };
    for (const auto& c : cases)
        require_refused(c, 400);
}

TEST_CASE("a second Host or Range or Content-Length header is refused", "[lesson03][guard]") {
    // Found by fuzz/guard_vs_httplib.cpp: with two Range headers, cpp-httplib acts on the first;
    // other parsers take the last. Which copy counts must never be a question.
    const Case cases[] = {
        {"two Range headers", request_with("Range: bytes=0-1, x\r\nRange: bytes=0-1\r\n")},
        {"two Host headers", request_with("Host: a\r\nHost: b\r\n")},
        {"two Content-Length headers", request_with("Content-Length: 0\r\ncontent-length: 0\r\n")},
    };
    for (const auto& c : cases)
        require_refused(c, 400);
}

TEST_CASE("the request line is METHOD SP origin-form SP HTTP/1.x, nothing looser",
          "[lesson03][guard]") {
    const Case cases[] = {
        {"two spaces", "GET  /hello HTTP/1.1\r\n\r\n"},
        {"a tab for a space", "GET\t/hello HTTP/1.1\r\n\r\n"},
        {"a trailing space", "GET /hello HTTP/1.1 \r\n\r\n"},
        {"no version", "GET /hello\r\n\r\n"},
        {"HTTP/2.0", "GET /hello HTTP/2.0\r\n\r\n"},
        {"a lowercase method", "get /hello HTTP/1.1\r\n\r\n"},
        {"a method cpp-httplib does not route", "BREW /pot HTTP/1.1\r\n\r\n"},
        {"an absolute-form target", "GET http://x/hello HTTP/1.1\r\n\r\n"},
        {"a fragment", "GET /hello#top HTTP/1.1\r\n\r\n"},
        {"two '?' (cpp-httplib refuses a second query)", "GET /a?b?c HTTP/1.1\r\n\r\n"},
        {"an empty head", "\r\n\r\n"},
    };
    for (const auto& c : cases)
        require_refused(c, 400);
}

TEST_CASE("request bodies are refused, and so is a body length the guard cannot read",
          "[lesson03][guard]") {
    require_refused({"a Content-Length", request_with("Content-Length: 5\r\n")}, 413);
    require_refused({"a chunked body", request_with("Transfer-Encoding: chunked\r\n")}, 413);
    require_refused({"Content-Length not a number", request_with("Content-Length: 0x10\r\n")}, 400);
    require_refused({"an empty Content-Length", request_with("Content-Length:\r\n")}, 400);
    // cpp-httplib reads such a POST's body until the connection closes, with no limit at all.
    require_refused({"a POST without Content-Length", "POST /x HTTP/1.1\r\nHost: x\r\n\r\n"}, 411);
}

TEST_CASE("a Range hidden behind a bare LF is answered 400 and the server keeps serving",
          "[lesson03][guard]") {
    GuardedServer server;
    const std::string crafted = request_with("Host: x\nRange: " + many_ranges(300) + "\r\n");
    STEP("sent a GET whose 'Host: x\\nRange: <300 ranges>' line is one line to a CRLF parser, "
         "two to cpp-httplib ("
         << crafted.size() << " bytes)");
    RawConnection attacker(server.port());
    REQUIRE(attacker.send(crafted));
    const std::string response = attacker.receive_response(5s);
    STEP("answered: " << spelled_out(response.substr(0, response.find('\r'))));
    CHECK(status_of(response) == 400);
    RawConnection next(server.port());
    REQUIRE(next.send(get_request("/hello")));
    const std::string after = next.receive_response(5s);
    STEP("the next client got: " << spelled_out(after.substr(0, after.find('\r'))));
    CHECK(body_of(after) == "hello\n");
}

TEST_CASE("a body hidden behind a bare LF is answered 400 before it is read", "[lesson03][guard]") {
    GuardedServer server;
    const std::string body(100000, 'b');
    const std::string crafted =
        "POST /hello HTTP/1.1\r\nHost: x\nContent-Length: 100000\r\n\r\n" + body;
    STEP("sent a POST whose Content-Length: 100000 hides behind a bare LF, then the body");
    RawConnection attacker(server.port());
    REQUIRE(attacker.send(crafted));
    const std::string response = attacker.receive_response(5s);
    STEP("answered: " << spelled_out(response.substr(0, response.find('\r'))));
    CHECK(status_of(response) == 400);
    RawConnection next(server.port());
    REQUIRE(next.send(get_request("/hello")));
    CHECK(body_of(next.receive_response(5s)) == "hello\n");
}

TEST_CASE("cpp-httplib itself refuses a request body that gets past the guard",
          "[lesson03][guard]") {
    // Defence in depth: should a body ever get past the guard, the library configured by the
    // Connector must refuse it rather than read it into memory.
    HttpApp app;
    app.Post("/hello", [](const httplib::Request&, httplib::Response& res) {
        res.set_content("took a body\n", "text/plain");
    });
    const Connector connector(app, ConnectorOptions{}); // configures the app; starts nothing
    const std::string request =
        "POST /hello HTTP/1.1\r\nContent-Length: 100000\r\n\r\n" + std::string(100000, 'b');
    httplib::detail::BufferStream stream; // the library's in-memory stream: reads what we wrote
    stream.write(request.data(), request.size());
    bool closed = false;
    app.process(stream, false, closed);
    const std::string response = stream.get_buffer().substr(request.size());
    STEP("handed cpp-httplib a POST with a 100,000-byte body directly, past the guard");
    STEP("it answered: " << spelled_out(response.substr(0, response.find('\r'))));
    CHECK(status_of(response) == 413);
}
