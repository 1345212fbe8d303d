#include "lessons/instruments/trace/trace_writer.hpp"

#include "lessons/common/flags.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>

namespace trace {
namespace {

// ordered: each event's keys in the order written (ph first), as trace viewers show them.
using json = nlohmann::ordered_json;

std::string fiber_address(const void* fiber) {
    char text[32];
    std::snprintf(text, sizeof text, "%p", fiber);
    return text;
}

// The labels every fiber had, to name its turns and waits: the label last set before the turn
// ended. A label's end ("") before the turn began means the fiber at that address is another.
class Names {
public:
    explicit Names(std::vector<Label> labels) : labels_(std::move(labels)) {
        for (const Label& label : labels_)
            by_fiber_[label.fiber].push_back(&label);
        for (auto& [fiber, list] : by_fiber_)
            std::stable_sort(list.begin(), list.end(),
                             [](const Label* a, const Label* b) { return a->at_ns < b->at_ns; });
    }
    std::string of(const void* fiber, std::int64_t start_ns, std::int64_t end_ns) const {
        const auto found = by_fiber_.find(fiber);
        if (found != by_fiber_.end()) {
            const auto& list = found->second;
            auto last = std::upper_bound(
                list.begin(), list.end(), end_ns,
                [](std::int64_t at, const Label* label) { return at < label->at_ns; });
            while (last != list.begin()) {
                const Label* label = *--last;
                if (label->text[0] != '\0') return label->text;
                if (label->at_ns < start_ns) break; // ended before: another fiber since
            }
        }
        return "fiber " + fiber_address(fiber);
    }

private:
    std::vector<Label> labels_;
    std::unordered_map<const void*, std::vector<const Label*>> by_fiber_;
};

struct Snapshot {
    int tid;
    std::string name;
    std::vector<Turn> turns;
    std::vector<Wait> waits;
    std::vector<Counter> counters;
};

// One event a line. A label cut in the middle of a UTF-8 character, or a request target's stray
// bytes, become U+FFFD rather than invalid JSON.
class EventWriter {
public:
    explicit EventWriter(std::FILE* out) : out_(out) {}
    void operator()(const json& event) {
        const std::string text = event.dump(-1, ' ', false, json::error_handler_t::replace);
        std::fputs(count_++ == 0 ? "\n" : ",\n", out_);
        std::fputs(text.c_str(), out_);
    }
    std::size_t count() const { return count_; }

private:
    std::FILE* out_;
    std::size_t count_ = 0;
};

// Writes the events that ended after `cutoff_ns`; returns how many (not counting the names).
std::size_t write_events(EventWriter& write, const WriteRequest& request, std::int64_t cutoff_ns,
                         const std::vector<Snapshot>& tracks, const Names& names) {
    const int pid = static_cast<int>(::getpid());
    const auto us = [&](std::int64_t ns) {
        return static_cast<double>(ns - request.start_ns) / 1e3;
    };
    write({{"ph", "M"},
           {"name", "process_name"},
           {"pid", pid},
           {"args", {{"name", request.program}}}});
    const std::size_t names_written = 1 + tracks.size(); // these metadata events are not counted
    long long id = 0;
    for (const Snapshot& track : tracks) {
        write({{"ph", "M"},
               {"name", "thread_name"},
               {"pid", pid},
               {"tid", track.tid},
               {"args", {{"name", track.name}}}});
        for (const Turn& turn : track.turns) {
            if (turn.end_ns < cutoff_ns) continue;
            write({{"ph", "X"},
                   {"cat", "turn"},
                   {"name", names.of(turn.fiber, turn.start_ns, turn.end_ns)},
                   {"pid", pid},
                   {"tid", track.tid},
                   {"ts", us(turn.start_ns)},
                   {"dur", static_cast<double>(turn.end_ns - turn.start_ns) / 1e3},
                   {"args", {{"fiber", fiber_address(turn.fiber)}}}});
        }
        for (const Wait& wait : track.waits) {
            if (wait.end_ns < cutoff_ns) continue;
            json args = {{"fiber", names.of(wait.fiber, wait.start_ns, wait.end_ns)}};
            if (wait.key != nullptr)
                args[wait.key] = wait.text != nullptr ? json(wait.text) : json(wait.number);
            ++id;
            write({{"ph", "b"},
                   {"cat", "wait"},
                   {"name", wait.name},
                   {"id", id},
                   {"pid", pid},
                   {"tid", track.tid},
                   {"ts", us(wait.start_ns)},
                   {"args", std::move(args)}});
            write({{"ph", "e"},
                   {"cat", "wait"},
                   {"name", wait.name},
                   {"id", id},
                   {"pid", pid},
                   {"tid", track.tid},
                   {"ts", us(wait.end_ns)}});
        }
        for (const Counter& counter : track.counters) {
            if (counter.at_ns < cutoff_ns) continue;
            json args = {{counter.key[0], counter.value[0]}};
            if (counter.key[1] != nullptr) args[counter.key[1]] = counter.value[1];
            write({{"ph", "C"},
                   {"name", counter.name},
                   {"pid", pid},
                   {"tid", track.tid},
                   {"ts", us(counter.at_ns)},
                   {"args", std::move(args)}});
        }
    }
    return write.count() - names_written;
}

// Opens FILE.tmp for writing, private to its owner (request targets carry query strings). A
// name other users may guess: a link planted there is removed, not followed, and a file that
// reappears in the meantime makes the open fail (O_EXCL) rather than be written through.
std::FILE* open_temporary(const std::string& tmp) {
    if (::unlink(tmp.c_str()) != 0 && errno != ENOENT) return nullptr;
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return nullptr;
    std::FILE* file = ::fdopen(fd, "w");
    if (file == nullptr) ::close(fd);
    return file;
}

// Why `path` may not be replaced by a trace, or nullptr when it may: it is absent or a regular
// file. The rename that makes FILE whole would replace whatever is there: as root, a device
// (/dev/null), a FIFO a reader waits on, or a link (lstat: the link itself is replaced).
const char* why_not_replace(const std::string& path) {
    struct stat file {};
    if (::lstat(path.c_str(), &file) != 0 || S_ISREG(file.st_mode)) return nullptr;
    if (S_ISDIR(file.st_mode)) return "Is a directory";
    return "not a regular file (the trace replaces only a regular file)";
}

} // namespace

void check_writable(const std::string& path) {
    // First: --trace /dev/null must not even make /dev/null.tmp.
    if (const char* why = why_not_replace(path))
        throw std::runtime_error("cannot write the trace to " + path + ": " + why);
    const std::string tmp = path + ".tmp";
    std::FILE* probe = open_temporary(tmp);
    if (probe == nullptr)
        throw std::runtime_error("cannot write the trace to " + path + ": " + std::strerror(errno));
    std::fclose(probe);
    std::remove(tmp.c_str());
}

bool write_tracks(const WriteRequest& request, const std::vector<std::shared_ptr<Track>>& tracks) {
    const std::int64_t now = now_ns();
    const std::int64_t window_ns = std::chrono::nanoseconds(request.window).count();
    const std::int64_t cutoff_ns =
        (request.stop_began_ns != 0 ? request.stop_began_ns : now) - window_ns;
    // Copy each track's records, holding it for a copy's time only; resolve names afterwards.
    std::vector<Snapshot> snapshots;
    std::vector<Label> labels;
    std::uint64_t dropped = 0;
    for (const auto& track : tracks) {
        std::lock_guard<std::mutex> lock(track->mutex);
        snapshots.push_back(Snapshot{track->tid, track->name, track->turns.in_order(),
                                     track->waits.in_order(), track->counters.in_order()});
        const std::vector<Label> more = track->labels.in_order();
        labels.insert(labels.end(), more.begin(), more.end());
        dropped += track->dropped;
    }
    const Names names(std::move(labels));

    const char* program = request.program.c_str();
    const auto refuse = [&](const char* why) {
        std::fprintf(stderr, "%s: cannot write the trace to %s: %s\n", program,
                     request.path.c_str(), why);
        return false;
    };
    // Checked at start, and again now: FILE may have become something else since.
    if (const char* why = why_not_replace(request.path)) return refuse(why);
    const std::string tmp = request.path + ".tmp";
    std::FILE* out = open_temporary(tmp);
    if (out == nullptr) {
        std::fprintf(stderr, "%s: cannot write the trace to %s: %s\n", program, tmp.c_str(),
                     std::strerror(errno));
        return false;
    }
    std::fputs("{\"traceEvents\":[", out);
    EventWriter write(out);
    const std::size_t count = write_events(write, request, cutoff_ns, snapshots, names);
    const json other = {{"program", request.program},
                        {"window_s", static_cast<double>(request.window.count()) / 1e3},
                        {"dropped_events", dropped}};
    std::fprintf(out, "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":%s}\n",
                 other.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
    bool written = !std::ferror(out);
    written = std::fclose(out) == 0 && written;
    // And right before the rename (a target swapped in this last moment is not caught).
    if (const char* why = written ? why_not_replace(request.path) : nullptr) {
        std::remove(tmp.c_str());
        return refuse(why);
    }
    // The rename is atomic: FILE is the previous whole trace until it is this whole trace.
    if (!written || std::rename(tmp.c_str(), request.path.c_str()) != 0) {
        std::fprintf(stderr, "%s: cannot write the trace to %s: %s\n", program,
                     request.path.c_str(), std::strerror(errno));
        std::remove(tmp.c_str());
        return false;
    }
    std::string what = "the last " + format_duration(request.window);
    if (request.stop_began_ns != 0)
        what = "the " + format_duration(request.window) + " before the stop began and the " +
               format_duration(std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::nanoseconds(now - request.stop_began_ns))) +
               " since";
    std::fprintf(stderr, "%s: trace of %s written to %s (%zu events, %llu dropped)\n", program,
                 what.c_str(), request.path.c_str(), count,
                 static_cast<unsigned long long>(dropped));
    return true;
}

} // namespace trace
