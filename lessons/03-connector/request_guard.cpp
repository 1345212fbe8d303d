#include "request_guard.hpp"

#include <cstring>
#include <strings.h>

namespace {

bool header_is(const std::string& line, std::size_t colon, const char* name) {
    return colon == std::strlen(name) && ::strncasecmp(line.data(), name, colon) == 0;
}

std::string trimmed_value(const std::string& line, std::size_t colon) {
    std::size_t begin = colon + 1;
    std::size_t end = line.size();
    while (begin < end && (line[begin] == ' ' || line[begin] == '\t'))
        ++begin;
    while (end > begin && (line[end - 1] == ' ' || line[end - 1] == '\t'))
        --end;
    return line.substr(begin, end - begin);
}

const char* reason_phrase(int status) {
    switch (status) {
    case 408:
        return "Request Timeout";
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

    std::size_t line_begin = 0;
    bool first_line = true;
    while (line_begin < head.size()) {
        std::size_t line_end = head.find("\r\n", line_begin);
        if (line_end == std::string::npos) line_end = head.size();
        const std::string line = head.substr(line_begin, line_end - line_begin);
        line_begin = line_end + 2;
        if (line.empty()) break; // the blank line ending the head
        if (first_line) {
            first_line = false;
            // METHOD SP TARGET SP VERSION; anything malformed is left to cpp-httplib (400).
            const std::size_t space1 = line.find(' ');
            const std::size_t space2 = line.rfind(' ');
            if (space1 != std::string::npos && space2 > space1 &&
                space2 - space1 - 1 > limits.max_target_bytes)
                return Refusal{414, "request target over " +
                                        std::to_string(limits.max_target_bytes) + " bytes"};
            continue;
        }
        const std::size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        if (header_is(line, colon, "Range") &&
            trimmed_value(line, colon).size() > limits.max_range_bytes)
            return Refusal{416, "Range header over " + std::to_string(limits.max_range_bytes) +
                                    " bytes"};
        if (header_is(line, colon, "Transfer-Encoding"))
            return Refusal{413, "this server takes no request bodies"};
        if (header_is(line, colon, "Content-Length")) {
            const std::string value = trimmed_value(line, colon);
            if (value.find_first_not_of('0') != std::string::npos)
                return Refusal{413, "this server takes no request bodies"};
        }
    }
    return std::nullopt;
}

std::string refusal_response(const Refusal& refusal) {
    const std::string body = refusal.reason + "\n";
    return "HTTP/1.1 " + std::to_string(refusal.status) + " " + reason_phrase(refusal.status) +
           "\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\nConnection: close\r\n\r\n" + body;
}
