#include "lessons/instruments/spike/spike_log.hpp"

#include "lessons/instruments/spike/spike_attempt.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace {

// How often the writer wakes: at most this much of the CSV is lost if the spike itself dies.
constexpr std::chrono::milliseconds flush_interval{250};

double ms(std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

} // namespace

SpikeLog::SpikeLog(const std::string& path, int workers, Clock::time_point start, bool open_loop)
    : path_(path), start_(start), open_loop_(open_loop),
      started_(static_cast<std::size_t>(workers)) {
    file_ = std::fopen(path.c_str(), "w");
    if (file_ == nullptr)
        throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
    // Plain CSV written by hand: three numbers a row need no library, and awk reads them.
    std::fputs(open_loop_ ? "ts,status,latency_ms,sent_ms\n" : "ts,status,latency_ms\n", file_);
    std::fflush(file_);
    writer_ = std::thread([this] { write_rows(); });
}

SpikeLog::~SpikeLog() {
    try {
        close();
    } catch (const std::exception&) {
        // close() was not called and the write failed: nobody is left to tell.
    }
}

bool SpikeLog::begin(int worker, Clock::time_point intended, Clock::time_point sent) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (interrupted_) return false;
    started_[static_cast<std::size_t>(worker)] = Started{intended, sent};
    ++counts_.in_flight;
    return true;
}

bool SpikeLog::not_sent(Clock::time_point intended, Clock::time_point at) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (interrupted_) return false;
    queued_.push_back({ms(intended - start_), sentinel::not_sent, ms(at - intended), -1});
    ++counts_.rows;
    ++counts_.by_status[sentinel::not_sent];
    return true;
}

void SpikeLog::finish(int worker, int status, Clock::time_point at) {
    std::lock_guard<std::mutex> lock(mutex_);
    // After interrupt() this attempt already has its -4 row.
    if (started_[static_cast<std::size_t>(worker)]) record(worker, status, at);
}

int SpikeLog::interrupt(Clock::time_point at) {
    std::lock_guard<std::mutex> lock(mutex_);
    interrupted_ = true;
    int recorded = 0;
    for (std::size_t worker = 0; worker < started_.size(); ++worker)
        if (started_[worker]) {
            record(static_cast<int>(worker), sentinel::interrupted, at);
            ++recorded;
        }
    return recorded;
}

void SpikeLog::record(int worker, int status, Clock::time_point at) {
    auto& started = started_[static_cast<std::size_t>(worker)];
    queued_.push_back({ms(started->intended - start_), status, ms(at - started->intended),
                       ms(started->sent - start_)});
    started.reset();
    --counts_.in_flight;
    ++counts_.rows;
    ++counts_.by_status[status];
}

void SpikeLog::write_rows() {
    std::vector<Row> batch;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        wake_writer_.wait_for(lock, flush_interval, [&] { return closing_; });
        const bool last = closing_;
        batch.swap(queued_);
        lock.unlock();
        bool ok = true;
        for (const Row& row : batch)
            ok = (open_loop_ ? std::fprintf(file_, "%.3f,%d,%.3f,%.3f\n", row.ts_ms, row.status,
                                            row.latency_ms, row.sent_ms)
                             : std::fprintf(file_, "%.3f,%d,%.3f\n", row.ts_ms, row.status,
                                            row.latency_ms)) > 0 &&
                 ok;
        ok = std::fflush(file_) == 0 && ok;
        const int error = errno;
        batch.clear();
        lock.lock();
        if (!ok && write_error_.empty())
            write_error_ = "writing " + path_ + " failed: " + std::strerror(error);
        if (last) return;
    }
}

void SpikeLog::close() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (file_ == nullptr) return;
        closing_ = true;
    }
    wake_writer_.notify_one();
    writer_.join();
    const bool closed = std::fclose(file_) == 0;
    file_ = nullptr;
    if (!closed && write_error_.empty())
        write_error_ = "writing " + path_ + " failed: " + std::strerror(errno);
    if (!write_error_.empty()) throw std::runtime_error(write_error_);
}

SpikeCounts SpikeLog::counts() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return counts_;
}
