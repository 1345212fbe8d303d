// What the tracer keeps: one Track per recording thread, holding its records in bounded rings.
// The recorder (recorder.cpp) adds to them; the writer (trace_writer.cpp) copies them out.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace trace {

// Every record's clock: steady (never jumps back), in nanoseconds.
inline std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// A label is stored in place, not as a std::string, so labelling costs no allocation; longer
// labels are cut to this many characters ("conn 12 GET /work?..." stays readable).
constexpr std::size_t label_chars = 47;

struct Turn {
    const void* fiber;
    std::int64_t start_ns, end_ns;
};
struct Wait {
    const char* name;
    const void* fiber;
    std::int64_t start_ns, end_ns;
    const char* key; // the one argument, a text or a number; nullptr: none
    const char* text;
    std::int64_t number;
};
struct Label {
    const void* fiber;
    std::int64_t at_ns;
    char text[label_chars + 1]; // "": the fiber ended
};
struct Counter {
    const char* name;
    std::int64_t at_ns;
    const char* key[2];
    std::int64_t value[2];
};
// When a record was complete: what the window is measured against.
inline std::int64_t done_ns(const Turn& turn) {
    return turn.end_ns;
}
inline std::int64_t done_ns(const Wait& wait) {
    return wait.end_ns;
}
inline std::int64_t done_ns(const Label& label) {
    return label.at_ns;
}
inline std::int64_t done_ns(const Counter& counter) {
    return counter.at_ns;
}

// The last `capacity` records, oldest overwritten first.
template <typename T> class Ring {
public:
    // Reserved whole: growing would copy the records and return memory to the system, which costs
    // every core an interrupt (a TLB shootdown) in the middle of the carriers' work.
    explicit Ring(std::size_t capacity) : capacity_(capacity) { items_.reserve(capacity); }
    bool full() const { return items_.size() == capacity_; }
    const T& oldest() const { return full() ? items_[next_] : items_.front(); }
    void push(const T& item) {
        if (!full()) {
            items_.push_back(item);
            return;
        }
        items_[next_] = item;
        next_ = (next_ + 1) % capacity_;
    }
    std::vector<T> in_order() const {
        std::vector<T> out(items_.begin() + static_cast<std::ptrdiff_t>(next_), items_.end());
        out.insert(out.end(), items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(next_));
        return out;
    }

private:
    std::size_t capacity_;
    std::vector<T> items_;
    std::size_t next_ = 0; // the oldest, once full
};

// One thread's records. Only that thread adds to it (a wait that ends elsewhere excepted); the
// writer copies them. The mutex is uncontended but for those moments: ~20 ns a record.
struct Track {
    explicit Track(std::size_t capacity)
        : turns(capacity), waits(capacity), labels(capacity), counters(capacity) {}
    int tid = 0;
    std::string name;
    std::int64_t window_ns = 0;
    std::mutex mutex;
    Ring<Turn> turns;
    Ring<Wait> waits;
    Ring<Label> labels;
    Ring<Counter> counters;
    std::uint64_t dropped = 0;

    template <typename T> void add(Ring<T>& ring, const T& record) noexcept {
        std::lock_guard<std::mutex> lock(mutex);
        if (ring.full() && done_ns(ring.oldest()) >= done_ns(record) - window_ns) ++dropped;
        try {
            ring.push(record);
        } catch (...) { // out of memory: this record is lost
            ++dropped;
        }
    }
};

} // namespace trace
