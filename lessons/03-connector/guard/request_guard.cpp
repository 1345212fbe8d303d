#include "lessons/03-connector/guard/request_guard.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <httplib.h> // for the library's own line limits, CPPHTTPLIB_*_MAX_LENGTH
#include <initializer_list>
#include <string_view>
#include <strings.h>
#include <utility>
#include <vector>

// Where cpp-httplib 0.11.4 splits a request head (httplib.h: stream_line_reader::getline,
// Server::parse_request_line, detail::read_headers, detail::parse_header), and what we do there:
//  * Every line ends at the first LF. The request line must end in CRLF; a header line that
//    does not is skipped, silently. -> A CR or LF anywhere but in a CRLF is refused.
//  * The request line splits at runs of spaces and tabs into method, target and version; the
//    method must be one it knows, the version HTTP/1.0 or 1.1; it drops a '#fragment' and
//    refuses a target with a second '?'. -> Exactly one SP between the three parts, a method it
//    routes, a target of visible ASCII that starts with '/', with no '#' and one '?' at most.
//  * A header name is everything before the first ':', untrimmed; the value is trimmed of
//    spaces and tabs, percent-decoded, and dropped when empty. A line with no ':' is skipped;
//    one over CPPHTTPLIB_HEADER_MAX_LENGTH ends the request with 400.
//    -> A name is a token right before the ':'; a value holds no control bytes; a line without
//    ':', a folded line or an overlong one is refused.
namespace {

using std::string_view;

std::optional<Refusal> bad(const char* reason) {
    return Refusal{400, reason};
}

// tchar (RFC 9110 section 5.6.2): what a method or a field name is made of.
bool is_token_char(unsigned char c) {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
    return c != '\0' && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

// A field value is visible ASCII, obs-text (0x80-0xff), spaces and tabs: no control bytes.
bool is_value_char(unsigned char c) {
    return c == ' ' || c == '\t' || (c >= 0x21 && c != 0x7f);
}

bool is_name(string_view name, const char* expected) {
    return name.size() == std::strlen(expected) &&
           ::strncasecmp(name.data(), expected, name.size()) == 0;
}

bool is_one_of(string_view word, std::initializer_list<string_view> words) {
    return std::find(words.begin(), words.end(), word) != words.end();
}

string_view trimmed(string_view value) {
    const auto begin = value.find_first_not_of(" \t");
    if (begin == string_view::npos) return {};
    return value.substr(begin, value.find_last_not_of(" \t") - begin + 1);
}

// Splits the head into its lines at CRLF, up to the empty line that ends it. A CR or LF that is
// not part of a CRLF is refused: it is exactly where cpp-httplib's lines and ours would differ.
std::optional<Refusal> split_lines(string_view head, std::vector<string_view>& lines) {
    std::size_t begin = 0;
    for (std::size_t i = 0; i < head.size(); ++i) {
        if (head[i] == '\n') return bad("a bare LF in the request head (lines end in CRLF)");
        if (head[i] != '\r') continue;
        if (i + 1 == head.size() || head[i + 1] != '\n')
            return bad("a bare CR in the request head (lines end in CRLF)");
        lines.push_back(head.substr(begin, i - begin));
        ++i; // the LF
        begin = i + 1;
        if (lines.back().empty()) return std::nullopt; // the empty line: the head ends here
    }
    return bad("the request head does not end with an empty line");
}

// request-line = method SP request-target SP HTTP-version (RFC 9112 section 3).
std::optional<Refusal> check_request_line(string_view line, const GuardLimits& limits,
                                          string_view& method) {
    if (line.size() + 2 > CPPHTTPLIB_REQUEST_URI_MAX_LENGTH)
        return Refusal{414, "request line over " +
                                std::to_string(CPPHTTPLIB_REQUEST_URI_MAX_LENGTH) + " bytes"};
    const std::size_t space1 = line.find(' ');
    const std::size_t space2 = space1 == string_view::npos ? space1 : line.find(' ', space1 + 1);
    if (space2 == string_view::npos || line.find(' ', space2 + 1) != string_view::npos)
        return bad("the request line is not METHOD SP TARGET SP VERSION");
    method = line.substr(0, space1);
    const string_view target = line.substr(space1 + 1, space2 - space1 - 1);
    const string_view version = line.substr(space2 + 1);
    if (target.size() > limits.max_target_bytes)
        return Refusal{414,
                       "request target over " + std::to_string(limits.max_target_bytes) + " bytes"};
    if (!is_one_of(method, {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"}))
        return bad("a method this server does not route");
    if (!is_one_of(version, {"HTTP/1.1", "HTTP/1.0"}))
        return bad("the version is not HTTP/1.1 or HTTP/1.0");
    if (target.empty() || target[0] != '/') return bad("the target is not a path ('/...')");
    for (const unsigned char c : target)
        if (c < 0x21 || c > 0x7e || c == '#')
            return bad("the target holds a byte a request target may not");
    if (std::count(target.begin(), target.end(), '?') > 1) return bad("the target has two '?'");
    return std::nullopt;
}

// Fields a request may carry once at most: given two, cpp-httplib acts on the first and other
// parsers on the last, and which copy counts must never be a question (RFC 9110 section 5.3).
struct SingleFields {
    bool host = false, range = false, length = false;
};

// field-line = field-name ":" OWS field-value OWS (RFC 9112 section 5), and our limits.
std::optional<Refusal> check_field_line(string_view line, const GuardLimits& limits,
                                        SingleFields& seen) {
    if (line.size() + 2 > CPPHTTPLIB_HEADER_MAX_LENGTH)
        return Refusal{431, "a header line over " + std::to_string(CPPHTTPLIB_HEADER_MAX_LENGTH) +
                                " bytes"};
    if (line[0] == ' ' || line[0] == '\t')
        return bad("a folded header line (obs-fold, RFC 9112 section 5.2)");
    const std::size_t colon = line.find(':');
    if (colon == string_view::npos) return bad("a header line without ':'");
    const string_view name = line.substr(0, colon);
    if (name.empty() || !std::all_of(name.begin(), name.end(), is_token_char))
        return bad("a header name that is not a token right before ':'");
    const string_view value = trimmed(line.substr(colon + 1));
    if (!std::all_of(value.begin(), value.end(), is_value_char))
        return bad("a control byte in a header value");
    bool* once = is_name(name, "Host")             ? &seen.host
                 : is_name(name, "Range")          ? &seen.range
                 : is_name(name, "Content-Length") ? &seen.length
                                                   : nullptr;
    if (once && std::exchange(*once, true)) return bad("a second Host, Range or Content-Length");

    if (is_name(name, "Range") && value.size() > limits.max_range_bytes)
        return Refusal{416,
                       "Range header over " + std::to_string(limits.max_range_bytes) + " bytes"};
    if (is_name(name, "Transfer-Encoding"))
        return Refusal{413, "this server takes no request bodies"};
    if (is_name(name, "Content-Length")) {
        if (value.empty() || value.find_first_not_of("0123456789") != string_view::npos)
            return bad("Content-Length is not a number");
        if (value.find_first_not_of('0') != string_view::npos)
            return Refusal{413, "this server takes no request bodies"};
    }
    // cpp-httplib adds these to every request itself, after the client's: a client's own copy
    // would be the one get_header_value() returns.
    for (const char* own : {"REMOTE_ADDR", "REMOTE_PORT", "LOCAL_ADDR", "LOCAL_PORT"})
        if (is_name(name, own)) return bad("a header name cpp-httplib reserves for itself");
    return std::nullopt;
}

const char* reason_phrase(int status) {
    switch (status) {
    case 408:
        return "Request Timeout";
    case 411:
        return "Length Required";
    case 413:
        return "Payload Too Large";
    case 414:
        return "URI Too Long";
    case 416:
        return "Range Not Satisfiable";
    case 431:
        return "Request Header Fields Too Large";
    default:
        return "Bad Request";
    }
}

} // namespace

std::optional<Refusal> check_request_head(const std::string& head, const GuardLimits& limits) {
    if (head.size() > limits.max_head_bytes)
        return Refusal{431,
                       "request head over " + std::to_string(limits.max_head_bytes) + " bytes"};
    std::vector<string_view> lines;
    if (auto refusal = split_lines(head, lines)) return refusal;
    string_view method;
    if (auto refusal = check_request_line(lines.front(), limits, method)) return refusal;
    SingleFields seen;
    for (std::size_t i = 1; i + 1 < lines.size(); ++i) // the last line is the empty one
        if (auto refusal = check_field_line(lines[i], limits, seen)) return refusal;
    // Without a Content-Length, cpp-httplib reads the body of these until the connection closes,
    // with no limit (RFC 9112 says such a request has no body at all).
    if (!seen.length && is_one_of(method, {"POST", "PUT", "PATCH"}))
        return Refusal{411, "a " + std::string(method) + " needs Content-Length: 0 here"};
    return std::nullopt;
}

const char* refusal_reason(int status) {
    switch (status) {
    case 400:
        return "malformed";
    case 408:
        return "read_timeout";
    case 411:
        return "length_required";
    case 413:
        return "body";
    case 414:
        return "target_too_long";
    case 416:
        return "range_too_long";
    case 431:
        return "head_too_large";
    }
    return "other";
}

std::string refusal_response(const Refusal& refusal) {
    const std::string body = refusal.reason + "\n";
    return "HTTP/1.1 " + std::to_string(refusal.status) + " " + reason_phrase(refusal.status) +
           "\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\nConnection: close\r\n\r\n" + body;
}

std::string spelled_out(std::string_view bytes) {
    std::string out;
    for (const char c : bytes) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '\r') {
            out += "\\r";
        } else if (c == '\n') {
            out += "\\n";
        } else if (byte < 0x20 || byte >= 0x7f) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02x", byte);
            out += hex;
        } else {
            out += c;
        }
    }
    return out;
}
