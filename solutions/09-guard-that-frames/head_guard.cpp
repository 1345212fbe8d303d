#include "head_guard.hpp"

#include <algorithm>
#include <cstring>
#include <strings.h>
#include <utility>
#include <vector>

// cpp-httplib 0.11.4 ends every line at the first LF, and skips a header line whose LF has no CR
// before it; this guard ends lines at CRLF. So "Host: a\nTransfer-Encoding: chunked" was one
// Host header here and a Transfer-Encoding header there: the check below never saw it. RFC 9112
// lets a server refuse a bare LF or CR, and a guard in front of a parser that reads them
// differently must: then every line ends in CRLF, where both readings agree.

namespace {

using std::string_view;

// What a request may not do here, and why.
constexpr std::size_t max_head_bytes = 8 * 1024; // cpp-httplib refuses a line over 8 KiB
constexpr std::size_t max_range_bytes = 64;      // cpp-httplib's Range regex recurses per byte

HeadVerdict refuse(int status, const char* reason) {
    return HeadVerdict{false, status, reason};
}

// tchar (RFC 9110 section 5.6.2): what a method or a field name is made of.
bool is_token_char(unsigned char c) {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
    return c != '\0' && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

bool named(string_view name, const char* expected) {
    return name.size() == std::strlen(expected) &&
           ::strncasecmp(name.data(), expected, name.size()) == 0;
}

string_view trimmed(string_view value) {
    const auto begin = value.find_first_not_of(" \t");
    if (begin == string_view::npos) return {};
    return value.substr(begin, value.find_last_not_of(" \t") - begin + 1);
}

// A CR or LF that is not part of a CRLF: where cpp-httplib's lines and ours would differ.
bool has_bare_cr_or_lf(string_view head) {
    for (std::size_t i = 0; i < head.size(); ++i) {
        if (head[i] == '\n' && (i == 0 || head[i - 1] != '\r')) return true;
        if (head[i] == '\r' && (i + 1 == head.size() || head[i + 1] != '\n')) return true;
    }
    return false;
}

// The head's lines, without their line ends, up to (not including) the empty line.
std::vector<string_view> lines_of(string_view head) {
    std::vector<string_view> lines;
    std::size_t begin = 0;
    for (std::size_t end; (end = head.find("\r\n", begin)) != string_view::npos; begin = end + 2) {
        if (end == begin) return lines; // the empty line
        lines.push_back(head.substr(begin, end - begin));
    }
    lines.clear(); // no empty line: not a whole head
    return lines;
}

// METHOD SP TARGET SP VERSION, no looser than cpp-httplib's own reading of it.
bool good_request_line(string_view line) {
    const std::size_t space1 = line.find(' ');
    const std::size_t space2 = space1 == string_view::npos ? space1 : line.find(' ', space1 + 1);
    if (space2 == string_view::npos || line.find(' ', space2 + 1) != string_view::npos)
        return false;
    const string_view method = line.substr(0, space1);
    const string_view target = line.substr(space1 + 1, space2 - space1 - 1);
    const string_view version = line.substr(space2 + 1);
    if (method != "GET" && method != "HEAD") return false;
    if (version != "HTTP/1.1" && version != "HTTP/1.0") return false;
    if (target.empty() || target[0] != '/') return false;
    return std::all_of(target.begin(), target.end(),
                       [](unsigned char c) { return c > 0x20 && c < 0x7f && c != '#'; }) &&
           std::count(target.begin(), target.end(), '?') <= 1;
}

} // namespace

HeadVerdict guard_head(string_view head) {
    if (head.size() > max_head_bytes) return refuse(431, "request head over 8 KiB");
    if (has_bare_cr_or_lf(head)) return refuse(400, "a bare CR or LF (lines end in CRLF)");
    const std::vector<string_view> lines = lines_of(head);
    if (lines.empty()) return refuse(400, "not a whole request head");
    if (!good_request_line(lines[0])) return refuse(400, "a bad request line");
    bool host = false;
    for (std::size_t i = 1; i < lines.size(); ++i) {
        const string_view line = lines[i];
        const std::size_t colon = line.find(':');
        if (colon == string_view::npos || colon == 0) return refuse(400, "a header without a name");
        const string_view name = line.substr(0, colon);
        if (!std::all_of(name.begin(), name.end(), is_token_char))
            return refuse(400, "a header name that is not a token right before ':'");
        const string_view value = trimmed(line.substr(colon + 1));
        if (named(name, "Transfer-Encoding") ||
            (named(name, "Content-Length") && value.find_first_not_of('0') != string_view::npos))
            return refuse(413, "this server takes no request bodies");
        if (named(name, "Range") && value.size() > max_range_bytes)
            return refuse(416, "Range header over 64 bytes");
        if (named(name, "Host") && std::exchange(host, true))
            return refuse(400, "a second Host header");
    }
    return HeadVerdict{};
}

std::string smuggling_head() {
    // The guard read one Host header, "example\nTransfer-Encoding: chunked"; cpp-httplib skipped
    // "Host: example\n" (no CR) and read a Transfer-Encoding: a body the guard refuses to allow.
    return "GET / HTTP/1.1\r\nHost: example\nTransfer-Encoding: chunked\r\n\r\n";
}
