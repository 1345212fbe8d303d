// Two readings of one request head, for the graded tests and the fuzz target of exercise 09:
//  * how cpp-httplib 0.11.4 reads it: its own Server::process_request over an in-memory stream
//    (the library's detail::BufferStream), stopped right after it parsed the request line and
//    the headers;
//  * how RFC 9112 reads it: lines end at CRLF, a header is the name before the first ':' and
//    the value after it, trimmed of spaces and tabs. That is what a guard that splits at CRLF
//    checked.
// A guard is safe only if, for every head it admits, the two readings are the same.
#pragma once

#include "lessons/03-connector/guard/request_guard.hpp" // spelled_out()

#include <httplib.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>
#include <strings.h>
#include <utility>
#include <vector>

struct HeadReading {
    bool parsed = false; // cpp-httplib got as far as routing it (the RFC reading always does)
    std::string refusal; // when not parsed: the status line cpp-httplib answered
    std::string method, target, version;
    std::vector<std::pair<std::string, std::string>> headers; // sorted, as a multimap holds them
};

inline bool operator==(const HeadReading& a, const HeadReading& b) {
    return a.parsed == b.parsed && a.method == b.method && a.target == b.target &&
           a.version == b.version && a.headers == b.headers;
}

namespace parser_view_detail {

// httplib::Server with its protected process_request in reach.
struct Parser : httplib::Server {
    HeadReading read(const std::string& bytes) {
        HeadReading reading;
        httplib::detail::BufferStream stream;
        stream.write(bytes.data(), bytes.size()); // what the client sent; answers go after it
        bool closed = false;
        const std::size_t sent = stream.get_buffer().size();
        process_request(stream, false, closed, [&](httplib::Request& request) {
            // Called once the request line and headers are parsed, before any body is read.
            reading.parsed = true;
            reading.method = request.method;
            reading.target = request.target;
            reading.version = request.version;
            // The library adds these four itself, after the client's own (a client may send
            // them too): leave out the last of each.
            for (const char* own : {"REMOTE_ADDR", "REMOTE_PORT", "LOCAL_ADDR", "LOCAL_PORT"}) {
                const auto [first, last] = request.headers.equal_range(own);
                if (first != last) request.headers.erase(std::prev(last));
            }
            for (const auto& [name, value] : request.headers)
                reading.headers.emplace_back(name, value);
            // A body the head announces is not ours to read: stop here.
            request.headers.erase("Content-Length");
            request.headers.erase("Transfer-Encoding");
        });
        if (!reading.parsed) {
            const std::string answer = stream.get_buffer().substr(sent);
            reading.refusal = answer.substr(0, answer.find('\r'));
        }
        return reading;
    }
};

inline std::string_view trimmed(std::string_view value) {
    const auto begin = value.find_first_not_of(" \t");
    if (begin == std::string_view::npos) return {};
    return value.substr(begin, value.find_last_not_of(" \t") - begin + 1);
}

} // namespace parser_view_detail

// What cpp-httplib reads in `bytes` (a head and whatever follows it).
inline HeadReading read_as_httplib(const std::string& bytes) {
    return parser_view_detail::Parser().read(bytes);
}

// What RFC 9112 reads in `head`, up to its first empty line, with cpp-httplib's own habits on
// top (it percent-decodes values and drops empty ones), so that the two compare.
inline HeadReading read_as_rfc(std::string_view head) {
    HeadReading reading;
    reading.parsed = true;
    std::size_t begin = 0;
    for (std::size_t end;
         (end = head.find("\r\n", begin)) != std::string_view::npos && end != begin;
         begin = end + 2) {
        const std::string_view line = head.substr(begin, end - begin);
        if (begin == 0) {
            const std::size_t space1 = line.find(' '), space2 = line.rfind(' ');
            reading.method = line.substr(0, space1);
            if (space1 != std::string_view::npos && space2 > space1) {
                reading.target = line.substr(space1 + 1, space2 - space1 - 1);
                reading.version = line.substr(space2 + 1);
            }
            continue;
        }
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        const std::string value(parser_view_detail::trimmed(line.substr(colon + 1)));
        if (!value.empty())
            reading.headers.emplace_back(line.substr(0, colon),
                                         httplib::detail::decode_url(value, false));
    }
    // As a std::multimap orders them: by name (case-insensitively), equal names in line order.
    std::stable_sort(reading.headers.begin(), reading.headers.end(),
                     [](auto& a, auto& b) { return httplib::detail::ci()(a.first, b.first); });
    return reading;
}

// A reading as one line, for a failure's story.
inline std::string described(const HeadReading& reading);

// For a head the guard admitted: "" when cpp-httplib reads it as RFC 9112 does, else the story
// of how the two differ. (cpp-httplib may still refuse a Range it cannot parse, with 416: the
// Range both read, so that is no disagreement.)
inline std::string framing_mismatch(const std::string& head) {
    const HeadReading rfc = read_as_rfc(head);
    const HeadReading library = read_as_httplib(head);
    if (library == rfc) return "";
    const bool range = std::any_of(rfc.headers.begin(), rfc.headers.end(), [](auto& header) {
        return ::strcasecmp(header.first.c_str(), "Range") == 0;
    });
    if (!library.parsed && range && library.refusal.rfind("HTTP/1.1 416 ", 0) == 0) return "";
    return "the guard read " + described(rfc) + "\n  cpp-httplib read " + described(library);
}

inline std::string described(const HeadReading& reading) {
    if (!reading.parsed) return "nothing: it answered '" + reading.refusal + "'";
    std::string out = "'" + spelled_out(reading.method) + " " + spelled_out(reading.target) + " " +
                      spelled_out(reading.version) + "'";
    for (const auto& [name, value] : reading.headers)
        out += ", " + spelled_out(name) + ": " + spelled_out(value);
    return out;
}
