#include "lessons/instruments/spike/probe.hpp"

#include "lessons/05-wirings/metrics_text.hpp"
#include "lessons/instruments/client/http_client.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace {

// One sample a second. A sample gets that second to answer: a hung /metrics costs one -1 row,
// and the next sample starts on the next whole second.
constexpr std::chrono::seconds probe_interval{1};

double ms(std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

} // namespace

Probe::Probe(const std::string& url, const std::string& path, Clock::time_point start)
    : path_(path), start_(start) {
    split_url(url, host_, port_, metrics_path_);
    file_ = std::fopen(path.c_str(), "w");
    if (file_ == nullptr)
        throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
    std::fputs("ts,inflight,connections,pool_pending\n", file_);
    std::fflush(file_);
    thread_ = std::thread([this] { run(); });
}

Probe::~Probe() {
    stop();
}

void Probe::stop() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (file_ == nullptr) return;
        stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
    std::fclose(file_);
    file_ = nullptr;
}

ProbeSample Probe::sample(Clock::time_point at) const {
    ProbeSample sample;
    sample.ts_ms = ms(at - start_);
    try {
        // Not on a carrier, so the client's waits block this thread in poll(): what we want.
        HttpClientConnection connection(host_, port_, at + probe_interval);
        const HttpResponse response = connection.get(metrics_path_, at + probe_interval);
        if (response.status != 200) return sample;
        sample.inflight = metric_value(response.body, "http_server_requests_inflight").value_or(-1);
        sample.connections =
            metric_value(response.body, "connector_connections_current").value_or(-1);
        sample.pool_pending = metric_value(response.body, "pool_connections_pending").value_or(-1);
    } catch (const std::exception&) {
        // No answer: the row says -1, which is what happened.
    }
    return sample;
}

void Probe::run() {
    auto next = start_;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        if (wake_.wait_until(lock, next, [&] { return stopping_; })) return;
        lock.unlock();
        const ProbeSample taken = sample(Clock::now());
        std::fprintf(file_, "%.3f,%.15g,%.15g,%.15g\n", taken.ts_ms, taken.inflight,
                     taken.connections, taken.pool_pending);
        std::fflush(file_);
        lock.lock();
        ++samples_;
        if (taken.inflight < 0 || taken.connections < 0) ++failed_;
        last_ = taken;
        // The next whole second after now: a slow sample skips ticks rather than bunching up.
        while (next <= Clock::now())
            next += probe_interval;
    }
}

long Probe::samples() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return samples_;
}

long Probe::failed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return failed_;
}

std::optional<ProbeSample> Probe::last() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_;
}
