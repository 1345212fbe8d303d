#include "shop.hpp"

#include "lessons/instruments/pinning/fiber_name.hpp"

#include <boost/fiber/operations.hpp>
#include <httplib.h>
#include <thread>

std::string serve_named(const std::string& route, const std::function<std::string()>& handler) {
    // TODO(ex6) task 1: name this fiber after the route first (fiber_name.hpp), so that the
    // detector's report says "GET /receipt" instead of "unnamed fiber 0x7f...".
    (void)route;
    return handler();
}

int Stock::count(const std::string& item) {
    // TODO(ex6) task 2: the detector shows where this pins. Fix it.
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = items_.find(item);
    return found == items_.end() ? 0 : found->second;
}

void Stock::restock(int each, const std::function<void()>& while_held) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& item : items_)
        item.second = each;
    while_held();
}

std::string handle_stock(Stock& stock, const std::string& item) {
    return item + ": " + std::to_string(stock.count(item)) + " in stock\n";
}

std::string handle_receipt(int order) {
    // TODO(ex6) task 3: the detector shows where this pins. legacy_render_receipt cannot be
    // changed: keep the call, but not on the carrier.
    return legacy_render_receipt(order);
}

namespace {

// A computation that keeps the CPU busy for `duration`: the report's number crunching.
void crunch_for(std::chrono::milliseconds duration) {
    // TODO(ex6) task 4: the detector shows where this pins. Keep the work, share the carrier.
    const auto end = std::chrono::steady_clock::now() + duration;
    while (std::chrono::steady_clock::now() < end) {
    }
}

} // namespace

std::string handle_report() {
    crunch_for(std::chrono::milliseconds(200));
    return "report: 3 items, 19 in stock\n";
}

// ---- do not change: the library and the routes ----

std::string legacy_render_receipt(int order) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200)); // it waits for a print server
    return "receipt #" + std::to_string(order) + ": 1 x tea, 2.50\n";
}

void add_shop_routes(httplib::Server& app, Stock& stock) {
    app.Get("/stock", [&stock](const httplib::Request& req, httplib::Response& res) {
        const std::string item = req.get_param_value("item");
        res.set_content(serve_named("GET /stock", [&] { return handle_stock(stock, item); }),
                        "text/plain");
    });
    app.Get("/receipt", [](const httplib::Request& req, httplib::Response& res) {
        const int order = std::stoi(req.get_param_value("order"));
        res.set_content(serve_named("GET /receipt", [&] { return handle_receipt(order); }),
                        "text/plain");
    });
    app.Get("/report", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(serve_named("GET /report", [] { return handle_report(); }), "text/plain");
    });
}
