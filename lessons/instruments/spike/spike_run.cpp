#include "lessons/instruments/spike/spike_run.hpp"

#include "lessons/03-connector/reactor.hpp"

#include <boost/fiber/operations.hpp>

namespace {

// Each worker fiber's stack. A worker only runs our small HTTP client (its deepest frame holds
// a 4 KiB read buffer), so 64 KiB is ample; a guard page turns an overflow into a crash at the
// spot. Only touched pages cost memory: about 8 KiB per worker.
constexpr std::size_t worker_stack_size = 64 * 1024;

// The least time before its deadline a late open-loop request must have left to be begun; with
// less it is not sent (-5). Begun with a sliver (the deadline of the request before it had just
// passed), its connect ran out of the request's own time, not of the server's, and was recorded
// as a -3 connect timeout: 13,307 of 300,000 rows of a loop that ran late against a server that
// accepts at once. 10 ms is hundreds of loopback or LAN connects; a --timeout under 100 ms gets
// a tenth of itself, so that a request on time is always begun.
constexpr std::chrono::milliseconds min_time_to_send{10};

std::chrono::nanoseconds time_to_send(std::chrono::milliseconds timeout) {
    return std::min<std::chrono::nanoseconds>(min_time_to_send, timeout / 10);
}

SpikeTarget target_of(const SpikeOptions& options) {
    SpikeTarget target;
    split_url(options.url, target.host, target.port, target.path);
    target.timeout = options.timeout;
    target.connect_timeout = options.connect_timeout;
    return target;
}

// Writes the row of a begun attempt when it goes out of scope: exactly one row per attempt on
// every path. Should the attempt throw (memory ran out), its row says -2, the status it holds
// then, before the exception ends the worker.
struct RowOnExit {
    SpikeLog& log;
    int worker;
    const int& status;
    ~RowOnExit() { log.finish(worker, status, std::chrono::steady_clock::now()); }
};

} // namespace

std::chrono::microseconds worker_offset(int worker, int workers, std::chrono::milliseconds ramp) {
    const long long ramp_us = std::chrono::microseconds(ramp).count();
    return std::chrono::microseconds(ramp_us * worker / workers);
}

std::chrono::nanoseconds intended_offset(long long request, int rate) {
    // Whole seconds, then the rest: request * 1e9 alone would overflow past 9.2e9 requests.
    constexpr long long ns_per_s = 1'000'000'000;
    return std::chrono::seconds(request / rate) +
           std::chrono::nanoseconds(request % rate * ns_per_s / rate);
}

long long scheduled_requests(int rate, std::chrono::milliseconds hold) {
    // Request i is intended before `hold` when i < hold * rate: ceil(hold_ms * rate / 1000).
    return (hold.count() * rate + 999) / 1000;
}

Spike::Spike(const SpikeOptions& options)
    : options_(options), target_(target_of(options)), start_(Clock::now()),
      end_(start_ + options.ramp + options.hold),
      log_(options.out, options.workers, start_, options.rate > 0),
      scheduled_(options.rate > 0 ? scheduled_requests(options.rate, options.hold) : 0),
      workers_left_(options.workers) {
    if (!options.probe_url.empty())
        probe_ = std::make_unique<Probe>(
            options.probe_url, options.probe_out.empty() ? "probe.csv" : options.probe_out, start_);
    for (int i = 0; i < options.carriers; ++i)
        carriers_.push_back(std::make_unique<Carrier>(
            "spike-" + std::to_string(i),
            [] { boost::fibers::use_scheduling_algorithm<Reactor>(); }, worker_stack_size));
    for (int worker = 0; worker < options.workers; ++worker)
        carriers_[static_cast<std::size_t>(worker % options.carriers)]->spawn(
            [this, worker] { work(worker); });
}

Spike::~Spike() {
    for (auto& carrier : carriers_)
        carrier->stop();
    try {
        close_files();
    } catch (const std::exception&) {
        // Reported by wait_for() to whoever waited; a destructor has nobody to tell.
    }
}

void Spike::work(int worker) {
    struct Done { // counts this worker out however the fiber ends
        Spike* spike;
        ~Done() { spike->worker_done(); }
    } done{this};
    if (options_.rate > 0) return keep_schedule(worker);
    boost::this_fiber::sleep_until(start_ + worker_offset(worker, options_.workers, options_.ramp));
    std::unique_ptr<HttpClientConnection> connection;
    while (Clock::now() < end_) {
        int status = 0;
        const Clock::time_point now = Clock::now();
        if (!attempt_with_row(worker, connection, now, now, status)) break; // interrupted
        if (status != 200)
            boost::this_fiber::sleep_until(std::min(Clock::now() + options_.backoff, end_));
    }
}

void Spike::keep_schedule(int worker) {
    std::unique_ptr<HttpClientConnection> connection;
    for (;;) {
        const long long request = next_request_.fetch_add(1);
        if (request >= scheduled_) return;
        const Clock::time_point intended = start_ + intended_offset(request, options_.rate);
        boost::this_fiber::sleep_until(intended); // at once when the request is late already
        const Clock::time_point now = Clock::now();
        if (now + time_to_send(options_.timeout) > intended + options_.timeout) {
            if (!log_.not_sent(intended, now)) return; // interrupted
            boost::this_fiber::yield(); // a spike that fell behind lets its other workers run
            continue;
        }
        int status = 0;
        if (!attempt_with_row(worker, connection, intended, now, status)) return; // interrupted
    }
}

bool Spike::attempt_with_row(int worker, std::unique_ptr<HttpClientConnection>& connection,
                             Clock::time_point intended, Clock::time_point sent, int& status) {
    if (!log_.begin(worker, intended, sent)) return false;
    status = sentinel::transport_error;
    const RowOnExit row{log_, worker, status};
    status = attempt(connection, target_, intended);
    return true;
}

void Spike::worker_done() {
    std::lock_guard<std::mutex> lock(done_mutex_);
    if (--workers_left_ == 0) all_done_.notify_all();
}

bool Spike::wait_for(std::chrono::milliseconds timeout) {
    {
        std::unique_lock<std::mutex> lock(done_mutex_);
        if (!all_done_.wait_for(lock, timeout, [&] { return workers_left_ == 0; })) return false;
    }
    close_files();
    return true;
}

int Spike::interrupt() {
    const int in_flight = log_.interrupt(Clock::now());
    close_files();
    return in_flight;
}

void Spike::close_files() {
    if (files_closed_) return;
    files_closed_ = true;
    if (probe_) probe_->stop();
    log_.close();
}

std::optional<ProbeSample> Spike::last_probe() const {
    return probe_ ? probe_->last() : std::nullopt;
}

long Spike::probe_samples() const {
    return probe_ ? probe_->samples() : 0;
}

long Spike::probe_failures() const {
    return probe_ ? probe_->failed() : 0;
}
