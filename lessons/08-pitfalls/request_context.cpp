#include "lessons/08-pitfalls/request_context.hpp"

#include "lessons/08-pitfalls/query_param.hpp"

#include <algorithm>
#include <boost/fiber/fss.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace {

struct RequestContext {
    std::string request_id;
};

// How long a request waits for the others at most: a client that asks for ten and sends nine
// gets a 504 after this, not a hang.
constexpr std::chrono::seconds meeting_timeout{10};

// ANTI-PATTERN: one per carrier thread, shared by every fiber on it.
thread_local RequestContext carrier_context;

// One value per fiber. A fiber here is a connection, which may carry many requests one after
// another, so the handler clears it when the request ends.
boost::fibers::fiber_specific_ptr<RequestContext> fiber_context;

// True when `id` is what max_request_id_length says an id may be.
bool usable_request_id(const std::string& id) {
    return !id.empty() && id.size() <= max_request_id_length &&
           std::all_of(id.begin(), id.end(), [](char c) { return c >= '!' && c <= '~'; });
}

// The code "far from the handler" that needs the request's id.
std::string id_for_the_log(const RequestContext& context) {
    return context.request_id;
}

// Keeps `id`, waits (parked) at the meeting, returns the id read back afterwards; "" on timeout.
std::string keep_wait_read(ContextStore store, const std::string& id, int together,
                           Meeting& meeting) {
    switch (store) {
    case ContextStore::thread_local_bad:
        carrier_context.request_id = id;
        if (!meeting.wait(together, meeting_timeout)) return "";
        return id_for_the_log(carrier_context); // whoever ran on this carrier last
    case ContextStore::fiber_specific: {
        fiber_context.reset(new RequestContext{id}); // owned by fiber_context from here on
        struct ClearAtEnd {
            ~ClearAtEnd() { fiber_context.reset(nullptr); }
        } clear_at_end;
        if (!meeting.wait(together, meeting_timeout)) return "";
        return id_for_the_log(*fiber_context);
    }
    case ContextStore::explicit_argument:
        break;
    }
    const RequestContext context{id};
    if (!meeting.wait(together, meeting_timeout)) return "";
    return id_for_the_log(context);
}

} // namespace

const char* name_of(ContextStore store) {
    switch (store) {
    case ContextStore::thread_local_bad:
        return "thread_local";
    case ContextStore::fiber_specific:
        return "boost::fibers::fiber_specific_ptr";
    case ContextStore::explicit_argument:
        break;
    }
    return "explicit argument";
}

void add_request_id_route(httplib::Server& server, ContextStore store, Meeting& meeting) {
    server.Get(
        "/request-id", [store, &meeting](const httplib::Request& req, httplib::Response& res) {
            const std::string id = req.get_param_value("id");
            if (!usable_request_id(id))
                return answer_bad_request(res, "id must be 1 to " +
                                                   std::to_string(max_request_id_length) +
                                                   " visible ASCII characters: ?id=7");
            int together = 1;
            try {
                together = static_cast<int>(whole_number_param(req, "together", 1, 1, 10'000));
            } catch (const std::invalid_argument& e) {
                return answer_bad_request(res, e.what());
            }
            const std::string read_back = keep_wait_read(store, id, together, meeting);
            if (read_back.empty()) {
                res.status = 504;
                res.set_content(
                    nlohmann::json{{"error", "fewer than " + std::to_string(together) +
                                                 " requests came together within " +
                                                 std::to_string(meeting_timeout.count()) + " s"}}
                            .dump() +
                        "\n",
                    "application/json");
                return;
            }
            const nlohmann::ordered_json answer = {
                {"id", id}, {"read_back", read_back}, {"store", name_of(store)}};
            res.set_content(answer.dump() + "\n", "application/json");
        });
}
