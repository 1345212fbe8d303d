#include "lessons/instruments/client/http_response_parser.hpp"

#include "lessons/03-connector/guard/request_guard.hpp" // spelled_out

#include <algorithm>
#include <cstring>
#include <strings.h>
#include <utility>

namespace {

using std::string_view;

// tchar (RFC 9110 section 5.6.2): what a field name is made of.
bool is_tchar(unsigned char c) {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
    return c != '\0' && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

// Control bytes other than HTAB have no place in a reason phrase or a field value.
bool is_control(unsigned char c) {
    return (c < 0x20 && c != '\t') || c == 0x7f;
}

// `text` without the spaces and tabs around it (OWS).
string_view trimmed(string_view text) {
    const std::size_t begin = text.find_first_not_of(" \t");
    if (begin == string_view::npos) return {};
    return text.substr(begin, text.find_last_not_of(" \t") - begin + 1);
}

bool same_name(string_view name, const char* expected) {
    return name.size() == std::strlen(expected) &&
           ::strncasecmp(name.data(), expected, name.size()) == 0;
}

// `line` for a message: control bytes spelled out, at most 60 bytes of it.
std::string shown(string_view line) {
    const std::string text = spelled_out(line.substr(0, 60));
    return "'" + text + (line.size() > 60 ? "...'" : "'");
}

} // namespace

bool ResponseBudget::take(std::size_t bytes) {
    std::size_t used = in_use_.load(std::memory_order_relaxed);
    do {
        if (bytes > limit_ - std::min(used, limit_)) {
            refusals_.fetch_add(1, std::memory_order_relaxed);
            return false;
        }
    } while (!in_use_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
    return true;
}

ResponseParser::~ResponseParser() {
    if (budget_ != nullptr) budget_->give_back(charged_);
}

bool ResponseParser::charge(std::size_t bytes) {
    if (budget_ == nullptr || bytes == 0) return true;
    if (!budget_->take(bytes)) {
        over_budget_ = true;
        refuse("over the memory budget of " + std::to_string(budget_->limit()) +
               " bytes that responses may hold at once");
        return false;
    }
    charged_ += bytes;
    return true;
}

std::size_t ResponseParser::room() const {
    if (state_ != State::more) return 0;
    if (!head_done_) return max_head_ - head_.size();
    // One byte past the limit tells a body that runs to the close is too large.
    if (until_close_) return max_body_ - response_.body.size() + 1;
    return body_size_ - response_.body.size();
}

std::size_t ResponseParser::feed(string_view bytes) {
    std::size_t taken = 0;
    while (state_ == State::more && taken < bytes.size()) {
        const std::size_t take = std::min(room(), bytes.size() - taken);
        if (head_done_) {
            if (until_close_ && response_.body.size() + take > max_body_) {
                refuse("a response body over " + std::to_string(max_body_) + " bytes");
                break;
            }
            // A body of a Content-Length was charged whole when the head announced it.
            if (until_close_ && !charge(take)) break;
            response_.body.append(bytes.data() + taken, take);
            taken += take;
            if (!until_close_ && response_.body.size() == body_size_) state_ = State::complete;
            continue;
        }
        if (!charge(take)) break;
        head_.append(bytes.data() + taken, take);
        taken += take;
        // Only the new bytes are searched (and three before them, for a blank line that arrived
        // split): a head that grows a byte at a time costs linear time, not quadratic.
        const std::size_t blank = head_.find("\r\n\r\n", searched_ >= 3 ? searched_ - 3 : 0);
        searched_ = head_.size();
        if (blank == std::string::npos) {
            if (head_.size() == max_head_)
                refuse("no end of the response head within " + std::to_string(max_head_) +
                       " bytes");
            continue;
        }
        // What came after the blank line is the body's: give it back, the loop takes it again.
        const std::size_t surplus = head_.size() - (blank + 4);
        taken -= surplus;
        head_.resize(blank + 4);
        if (budget_ != nullptr) {
            budget_->give_back(surplus);
            charged_ -= surplus;
        }
        head_done_ = true;
        parse_head();
    }
    return taken;
}

void ResponseParser::end_of_stream() {
    if (state_ != State::more) return;
    if (head_done_ && until_close_) {
        state_ = State::complete;
        return;
    }
    refuse(head_done_ ? "the server closed the connection in the middle of the body"
                      : "the server closed the connection");
}

void ResponseParser::refuse(const std::string& why) {
    state_ = State::refused;
    error_ = why;
}

void ResponseParser::parse_head() {
    // Each line ends in CRLF; the blank line's CRLF is dropped. A CR or LF inside a line is a
    // control byte, refused below: lines end where every parser agrees they end.
    const string_view head(head_.data(), head_.size() - 2);
    std::size_t end = head.find("\r\n");
    const string_view status_line = head.substr(0, end);
    // status-line = HTTP-version SP 3DIGIT SP [ reason-phrase ] (RFC 9112 section 4); the
    // space before an empty reason is often left out, so that is accepted too.
    const bool well_formed =
        status_line.size() >= 12 && status_line.compare(0, 7, "HTTP/1.") == 0 &&
        (status_line[7] == '0' || status_line[7] == '1') && status_line[8] == ' ' &&
        std::all_of(status_line.begin() + 9, status_line.begin() + 12,
                    [](char c) { return c >= '0' && c <= '9'; }) &&
        (status_line.size() == 12 || status_line[12] == ' ') &&
        std::none_of(status_line.begin() + 12, status_line.end(), is_control);
    if (!well_formed) return refuse("not an HTTP/1.x status line: " + shown(status_line));
    response_.status = std::stoi(std::string(status_line.substr(9, 3)));
    if (response_.status < 100 || response_.status > 599)
        return refuse("status " + std::to_string(response_.status) + " is not an HTTP status");
    if (response_.status < 200)
        return refuse("an interim response (" + std::to_string(response_.status) +
                      "), which this client does not expect");
    // An HTTP/1.0 server closes after its response unless both sides ask otherwise: not kept.
    response_.keep_alive = status_line[7] == '1';

    bool length_seen = false;
    for (std::size_t begin = end + 2; begin < head.size(); begin = end + 2) {
        end = head.find("\r\n", begin);
        // field-line = field-name ":" OWS field-value OWS (RFC 9112 section 5): no space
        // before the colon, no folded line, no control byte.
        const string_view line = head.substr(begin, end - begin);
        const std::size_t colon = line.find(':');
        const string_view name = line.substr(0, colon);
        if (colon == string_view::npos || name.empty() ||
            !std::all_of(name.begin(), name.end(), is_tchar) ||
            std::any_of(line.begin() + colon, line.end(), is_control))
            return refuse("a malformed header line in the response: " + shown(line));
        const string_view value = trimmed(line.substr(colon + 1));

        if (same_name(name, "Transfer-Encoding"))
            return refuse("Transfer-Encoding " + shown(value) + ", which this client cannot read");
        if (same_name(name, "Connection")) {
            // A list of options, e.g. "keep-alive, close".
            for (std::size_t at = 0; at <= value.size();) {
                const std::size_t comma = std::min(value.find(',', at), value.size());
                if (same_name(trimmed(value.substr(at, comma - at)), "close"))
                    response_.keep_alive = false;
                at = comma + 1;
            }
        }
        if (same_name(name, "Content-Length")) {
            if (std::exchange(length_seen, true))
                return refuse("a second Content-Length in the response");
            if (value.empty() || value.find_first_not_of("0123456789") != string_view::npos)
                return refuse("Content-Length " + shown(value) + " is not a number");
            // Digits past the limit's own count are over it, however many there are.
            const std::string limit = std::to_string(max_body_);
            const string_view digits =
                value.substr(std::min(value.find_first_not_of('0'), value.size()));
            if (digits.size() > limit.size() ||
                (digits.size() == limit.size() && digits > string_view(limit)))
                return refuse("Content-Length " + shown(value) + " is over the limit of " + limit +
                              " bytes");
            body_size_ = digits.empty() ? 0 : std::stoul(std::string(digits));
        }
    }
    // 204 and 304 have no body, whatever the headers say (RFC 9112 section 6.3).
    if (response_.status == 204 || response_.status == 304)
        body_size_ = 0;
    else if (!length_seen) {
        until_close_ = true; // the body is whatever comes before the close
        response_.keep_alive = false;
    }
    if (!until_close_ && body_size_ == 0) state_ = State::complete;
    // The body's whole length now, at once: a response that cannot fit is refused before a byte
    // of its body is read, and the body's buffer takes exactly that much.
    if (!until_close_ && body_size_ > 0 && charge(body_size_)) response_.body.reserve(body_size_);
}
