// Fuzz target: the HTTP client's ResponseParser, fed arbitrary bytes from a server, in one piece
// and in arbitrary chunks.
//
// The input's first bytes are a script (the reads' sizes, the head and body limits); the rest is
// what the server sent before it closed. Properties:
//  * it parses the same however the bytes arrive: in one piece, or in reads sized by the script
//    and never larger than room(), as HttpClientConnection reads (same state, error, status,
//    body, keep-alive, bytes taken);
//  * it never takes more than room(), never buffers past its limits, and asks for at least one
//    byte as long as it is not done;
//  * it accepts no response whose framing the bytes do not prove, by a second reading of them
//    written plainly here: the head ends at the first empty line within the limit, has an
//    HTTP/1.x status line and CRLF lines only, no Transfer-Encoding, at most one Content-Length,
//    all digits; and the body is exactly that many bytes (none for 204 and 304), or, with no
//    Content-Length, everything up to the close, and then the connection is not kept.
#include "lessons/instruments/client/http_response_parser.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fuzzer/FuzzedDataProvider.h>
#include <string>
#include <strings.h>
#include <vector>

namespace {

[[noreturn]] void finding(const std::string& what, const std::string& payload) {
    std::fprintf(stderr, "\nFINDING: %s\n  in a %zu-byte payload\n", what.c_str(), payload.size());
    std::abort();
}

struct Script {
    std::vector<std::size_t> reads; // the reads' sizes, used in turn
    std::size_t max_head = 0, max_body = 0;
    std::string payload;
};

Script script_from(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    Script script;
    for (int i = 0; i < 4; ++i)
        script.reads.push_back(in.ConsumeIntegralInRange<std::size_t>(1, 3000));
    script.max_head = in.ConsumeIntegralInRange<std::size_t>(1, 5000);
    script.max_body = in.ConsumeIntegralInRange<std::size_t>(0, 5000);
    script.payload = in.ConsumeRemainingBytesAsString();
    return script;
}

struct Outcome {
    ResponseParser::State state = ResponseParser::State::more;
    std::string error;
    HttpResponse response;
    std::size_t taken = 0;
    // What a refusal had taken depends on the reads (a body over the limit is found in the
    // read that passes it); a complete response's bytes do not.
    bool operator==(const Outcome& other) const {
        return state == other.state && error == other.error &&
               (state != ResponseParser::State::complete ||
                (taken == other.taken && response.status == other.response.status &&
                 response.body == other.response.body &&
                 response.keep_alive == other.response.keep_alive));
    }
};

Outcome finish(ResponseParser& parser, std::size_t taken) {
    return {parser.state(), parser.error(), parser.response(), taken};
}

Outcome in_one_piece(const Script& script) {
    ResponseParser parser(script.max_head, script.max_body);
    const std::size_t taken = parser.feed(script.payload);
    if (parser.state() == ResponseParser::State::more) parser.end_of_stream();
    return finish(parser, taken);
}

// As HttpClientConnection reads: at most room() at a time, then the close.
Outcome in_reads(const Script& script) {
    ResponseParser parser(script.max_head, script.max_body);
    const std::string& payload = script.payload;
    std::size_t taken = 0;
    for (std::size_t turn = 0; parser.state() == ResponseParser::State::more; ++turn) {
        const std::size_t room = parser.room();
        if (room == 0) finding("room() is 0 while the parser wants more", payload);
        if (taken == payload.size()) {
            parser.end_of_stream();
            break;
        }
        const std::size_t read =
            std::min({room, script.reads[turn % script.reads.size()], payload.size() - taken});
        const std::size_t took = parser.feed(std::string_view(payload).substr(taken, read));
        if (took > read) finding("feed() took more than it was given", payload);
        taken += took;
        if (took < read && parser.state() == ResponseParser::State::more)
            finding("feed() left bytes behind but wants more", payload);
        if (parser.buffered() > script.max_head + script.max_body)
            finding("the parser buffered past its limits", payload);
        if (took < read) break;
    }
    if (parser.state() != ResponseParser::State::more && parser.room() != 0)
        finding("room() is not 0 once the parser is done", payload);
    return finish(parser, taken);
}

bool starts_with_name(std::string_view line, const char* name) {
    const std::size_t length = std::strlen(name);
    return line.size() > length && ::strncasecmp(line.data(), name, length) == 0 &&
           line[length] == ':';
}

std::string_view without_ows(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
        text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t'))
        text.remove_suffix(1);
    return text;
}

// What the bytes must show for a response the parser completed.
void check_framing(const Script& script, const Outcome& outcome) {
    const std::string& payload = script.payload;
    const std::size_t blank = payload.find("\r\n\r\n");
    if (blank == std::string::npos) finding("complete without an empty line", payload);
    const std::size_t head_length = blank + 4;
    if (head_length > script.max_head) finding("a head over the limit accepted", payload);
    const std::string_view head = std::string_view(payload).substr(0, head_length);
    for (std::size_t i = 0; i < head.size(); ++i)
        if ((head[i] == '\r' && (i + 1 == head.size() || head[i + 1] != '\n')) ||
            (head[i] == '\n' && (i == 0 || head[i - 1] != '\r')))
            finding("a bare CR or LF in an accepted head", payload);
    if (head.compare(0, 9, "HTTP/1.1 ") != 0 && head.compare(0, 9, "HTTP/1.0 ") != 0)
        finding("an accepted status line that is not HTTP/1.x", payload);
    const int status = std::atoi(std::string(head.substr(9, 3)).c_str());
    if (status != outcome.response.status || status < 200 || status > 599)
        finding("an accepted status that is not the one sent, or not final", payload);
    int lengths = 0;
    std::string_view length;
    bool close = head.compare(0, 9, "HTTP/1.0 ") == 0;
    for (std::size_t begin = head.find("\r\n") + 2; begin < head_length - 2;) {
        const std::size_t end = head.find("\r\n", begin);
        const std::string_view line = head.substr(begin, end - begin);
        if (starts_with_name(line, "Transfer-Encoding"))
            finding("Transfer-Encoding accepted", payload);
        if (starts_with_name(line, "Content-Length")) {
            ++lengths;
            length = without_ows(line.substr(15));
        }
        if (starts_with_name(line, "Connection")) {
            std::string value(line.substr(11));
            for (char& c : value)
                c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            for (std::size_t at = 0; at <= value.size();) {
                const std::size_t comma = std::min(value.find(',', at), value.size());
                close |= without_ows(std::string_view(value).substr(at, comma - at)) == "close";
                at = comma + 1;
            }
        }
        begin = end + 2;
    }
    const std::string& body = outcome.response.body;
    if (payload.compare(head_length, body.size(), body) != 0)
        finding("the body is not the bytes after the head", payload);
    if (body.size() > script.max_body) finding("a body over the limit accepted", payload);
    if (lengths > 1) finding("two Content-Length accepted", payload);
    const bool bodiless = status == 204 || status == 304;
    if (lengths == 1 && (length.empty() || length.find_first_not_of("0123456789") != length.npos))
        finding("a Content-Length that is not digits accepted", payload);
    std::string digits(length);
    digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size()));
    if (lengths == 1 && !bodiless && (digits.empty() ? "0" : digits) != std::to_string(body.size()))
        finding("a body that is not Content-Length bytes", payload);
    if ((lengths == 1 || bodiless) && outcome.taken != head_length + body.size())
        finding("bytes taken past the body", payload);
    if (bodiless && !body.empty()) finding("a body on 204 or 304", payload);
    if (lengths == 0 && !bodiless &&
        (outcome.taken != payload.size() || outcome.response.keep_alive))
        finding("a body without a length that did not run to the close, or was kept", payload);
    if (close && outcome.response.keep_alive) finding("kept a connection told to close", payload);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const Script script = script_from(data, size);
    const Outcome whole = in_one_piece(script);
    const Outcome pieces = in_reads(script);
    if (!(whole == pieces))
        finding("one piece and reads disagree: state " + std::to_string(int(whole.state)) + " vs " +
                    std::to_string(int(pieces.state)) + ", '" + whole.error + "' vs '" +
                    pieces.error + "'",
                script.payload);
    if (whole.state == ResponseParser::State::complete) check_framing(script, whole);
    return 0;
}
