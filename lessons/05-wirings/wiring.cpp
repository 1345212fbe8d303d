#include "lessons/05-wirings/wiring.hpp"

Connector::Executor on_connection_fiber(RequestMetrics& metrics) {
    return [&metrics](const std::function<bool()>& serve) {
        RequestMetrics::InFlight in_flight(metrics);
        return in_flight.sent(serve()); // serve() is true when the response was sent
    };
}

Connector::Executor on_platform_threads(PlatformExecutor& threads, RequestMetrics& metrics) {
    return [&threads, &metrics](const std::function<bool()>& serve) {
        return threads.run([&] {
            // Counted from the moment a thread takes the request, not while it is queued.
            RequestMetrics::InFlight in_flight(metrics);
            return in_flight.sent(serve());
        });
    };
}
