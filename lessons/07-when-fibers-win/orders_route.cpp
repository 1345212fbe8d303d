#include "lessons/07-when-fibers-win/orders_route.hpp"

#include "lessons/common/process.hpp"

#include <cmath>
#include <nlohmann/json.hpp>

namespace {

using Clock = std::chrono::steady_clock;

// An indexed lookup takes well under a millisecond; a database that has not answered in 10 s is
// stuck, not busy, and the connection is dropped rather than reused mid-query.
constexpr std::chrono::milliseconds query_timeout{10000};

double ms_since(Clock::time_point start) {
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    return std::round(ms * 1000) / 1000; // to the microsecond: the rest is clock noise
}

void answer_text(httplib::Response& res, int status, const std::string& text) {
    res.status = status;
    res.set_content(text + "\n", "text/plain");
}

// `query` with its {id} replaced by the order's number, which the routes admit as digits only.
std::string with_id(std::string query, const std::string& id) {
    for (auto at = query.find("{id}"); at != std::string::npos; at = query.find("{id}", at))
        query.replace(at, 4, id);
    return query;
}

// The route's order number, without leading zeros: "007" is order 7.
std::string order_id(const httplib::Request& req) {
    return std::to_string(std::stol(req.matches[1]));
}

} // namespace

void add_orders_route(httplib::Server& server, PgPool& pool, InventoryClient& inventory) {
    // At most 9 digits: an id always fits PostgreSQL's integer, so no input reaches the SQL but
    // a number.
    server.Get(R"(/orders/([0-9]{1,9}))", [&pool, &inventory](const httplib::Request& req,
                                                              httplib::Response& res) {
        const std::string id = order_id(req);
        std::string item, quantity;
        const auto query_start = Clock::now();
        try {
            PgPool::Lease lease = pool.borrow();
            const PgResult rows = lease->query(with_id(orders_query, id), query_timeout);
            if (rows.rows() == 0) return answer_text(res, 404, "no order " + id);
            item = rows.value(0, 0);
            quantity = rows.value(0, 1);
        } catch (const PoolTimeout& e) {
            return answer_text(res, 500, e.what());
        } catch (const PgError& e) {
            return answer_text(res, 500, e.what());
        } // the lease is back in the pool before the downstream wait begins
        const double query_ms = ms_since(query_start);

        const auto inventory_start = Clock::now();
        HttpResponse downstream;
        std::string why;
        if (!inventory.get(downstream, why)) return answer_text(res, 502, why);
        if (downstream.status != 200)
            return answer_text(res, 502,
                               "inventory at " + inventory.url() + " answered " +
                                   std::to_string(downstream.status));
        const nlohmann::ordered_json answer = {{"id", std::stol(id)},
                                               {"item", item},
                                               {"quantity", std::stoi(quantity)},
                                               {"query_ms", query_ms},
                                               {"inventory_ms", ms_since(inventory_start)},
                                               {"thread", thread_label()}};
        res.set_content(answer.dump() + "\n", "application/json");
    });
}

void add_summary_route(httplib::Server& server, PgPool& pool) {
    server.Get(R"(/orders/([0-9]{1,9})/summary)", [&pool](const httplib::Request& req,
                                                          httplib::Response& res) {
        const std::string id = order_id(req);
        try {
            PgPool::Lease lease = pool.borrow();
            const PgResult order = lease->query(with_id(orders_query, id), query_timeout);
            if (order.rows() == 0) return answer_text(res, 404, "no order " + id);
            const PgResult recent = lease->query(with_id(recent_orders_query, id), query_timeout);
            const nlohmann::ordered_json answer = {
                {"id", std::stol(id)},
                {"item", order.value(0, 0)},
                {"quantity", std::stoi(order.value(0, 1))},
                {"recent_orders", std::stoi(recent.value(0, 0))},
                {"recent_quantity", std::stol(recent.value(0, 1))},
                {"thread", thread_label()}};
            res.set_content(answer.dump() + "\n", "application/json");
        } catch (const PoolTimeout& e) {
            answer_text(res, 500, e.what());
        } catch (const PgError& e) {
            answer_text(res, 500, e.what());
        }
    });
}
