// Requests the connector refuses before cpp-httplib sees them.
//
// Framing. A guard in front of a parser protects it only if both split the bytes in the same
// places. cpp-httplib 0.11.4 ends a line at LF; a guard that split on CRLF read
// "Host: x\nRange: ..." as one Host header while the library read a Range header behind it, and
// Content-Length or Transfer-Encoding could hide the same way (request smuggling is this class of
// bug: two parsers that disagree on where a message ends). So the guard admits only what RFC 9112
// allows in a request head, where every parser must agree: lines end in CRLF and nowhere else,
// no obs-fold, field names are tokens followed at once by ':', field values are visible bytes,
// spaces and tabs; and a request line no looser than cpp-httplib's own. Anything else gets 400.
//
// Size. cpp-httplib matches the Range header (and multipart bodies) with std::regex, whose
// matcher recurses once per character: a 300-byte Range header overflows a 128 KiB stack, an
// 8,000-byte one needs about 4 MiB. An OS thread has 8 MiB; our fibers have small stacks so that
// ten thousand of them fit in memory. So the limits below keep what reaches a regex small. They
// are far above what any real client sends to this server, and the stack test in
// connector_test.cpp proves the largest request they admit fits a connection fiber's stack.
//
// What is refused is answered with a 4xx status and "Connection: close". The fuzz target in
// fuzz/guard_vs_httplib.cpp checks that whatever the guard admits, cpp-httplib parses to the same
// request line and headers.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

struct GuardLimits {
    // Request line plus headers. Beyond it: 431 Request Header Fields Too Large.
    std::size_t max_head_bytes = 16 * 1024;
    // The request target (path and query). Beyond it: 414 URI Too Long.
    std::size_t max_target_bytes = 4096;
    // The Range header's value. Beyond it: 416 Range Not Satisfiable. A real client asks for a
    // range or two ("bytes=0-1023"); 64 bytes hold several.
    std::size_t max_range_bytes = 64;
};

struct Refusal {
    int status;
    std::string reason; // one line, sent as the response body
};

// Checks a complete request head ("GET / HTTP/1.1\r\n...\r\n\r\n"), up to its first empty line.
// Request bodies are refused (413, or 411 for a POST, PUT or PATCH that gives no
// Content-Length): no endpoint in this tutorial takes one, and a multipart body would reach
// std::regex.
std::optional<Refusal> check_request_head(const std::string& head, const GuardLimits& limits);

// What a refusal with `status` says, in a word or two for a metric's label: "malformed" (400),
// "read_timeout" (408), "length_required" (411), "body" (413), "target_too_long" (414),
// "range_too_long" (416), "head_too_large" (431); "other" for a status the connector never sends.
const char* refusal_reason(int status);

// The whole response for a refusal, with "Connection: close".
std::string refusal_response(const Refusal& refusal);

// `bytes` with CR, LF and other control bytes spelled out ("Host: x\nRange: ..."), for messages
// about a request head that must show exactly what was sent.
std::string spelled_out(std::string_view bytes);
