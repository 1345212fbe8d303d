#include "symbolizer.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <memory>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace {

#ifndef SOURCE_ROOT
#define SOURCE_ROOT ""
#endif
// Source paths under the repository are shown relative to it.
const std::string source_root = SOURCE_ROOT;

// addr2line reads debug information; for a large program that may take a second on a busy
// machine. Past this the watchdog gives up on names for this event rather than wait.
constexpr auto addr2line_timeout = std::chrono::seconds(10);

struct Location {
    std::string path;        // the file to hand addr2line
    std::string object;      // its base name, for display
    bool is_program = false; // the executable itself, not a shared library
    std::uintptr_t offset;   // the address relative to where the file was loaded
    std::string symbol;      // an exported symbol that contains the address, or ""
};

std::string demangle(const char* name) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> text(
        abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
    return status == 0 && text ? std::string(text.get()) : std::string(name);
}

// The executable's path. "/proc/self/exe" would not do: addr2line would read it as itself.
const std::string& program_path() {
    static const std::string path = [] {
        char buffer[4096];
        const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
        return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : std::string();
    }();
    return path;
}

std::string base_name(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool locate(std::uintptr_t address, Location& where) {
    Dl_info info{};
    link_map* map = nullptr;
    if (::dladdr1(reinterpret_cast<void*>(address), &info, reinterpret_cast<void**>(&map),
                  RTLD_DL_LINKMAP) == 0 ||
        map == nullptr)
        return false;
    const bool is_program = map->l_name == nullptr || map->l_name[0] == '\0';
    where.is_program = is_program;
    where.path = is_program ? program_path() : map->l_name;
    where.object = base_name(where.path);
    where.offset = address - map->l_addr;
    // dladdr names the nearest exported symbol *below* the address, which may be an unrelated
    // function when the real one is not exported: accept it only if its size covers the address.
    ElfW(Sym)* symbol = nullptr;
    if (::dladdr1(reinterpret_cast<void*>(address), &info, reinterpret_cast<void**>(&symbol),
                  RTLD_DL_SYMENT) != 0 &&
        symbol != nullptr && info.dli_sname != nullptr) {
        const std::uintptr_t start = map->l_addr + symbol->st_value;
        if (address >= start && address < start + symbol->st_size)
            where.symbol = demangle(info.dli_sname);
    }
    return true;
}

// Runs `addr2line -C -f -i -a -e path offsets...` and returns its output ("" on any failure).
std::string run_addr2line(const std::string& path, const std::vector<std::uintptr_t>& offsets) {
    std::vector<std::string> args = {"addr2line", "-C", "-f", "-i", "-a", "-e", path};
    for (const auto offset : offsets) {
        char text[32];
        std::snprintf(text, sizeof text, "0x%zx", static_cast<std::size_t>(offset));
        args.emplace_back(text);
    }
    std::vector<char*> argv;
    for (auto& arg : args)
        argv.push_back(arg.data());
    argv.push_back(nullptr);

    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return "";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    // The servers block SIGINT and SIGTERM in every thread; addr2line should not inherit that.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
    // Without DEBUGINFOD_URLS: addr2line would otherwise try to download debug information.
    std::vector<char*> env;
    for (char** var = environ; *var != nullptr; ++var)
        if (std::strncmp(*var, "DEBUGINFOD_URLS=", 16) != 0) env.push_back(*var);
    env.push_back(nullptr);
    pid_t pid = -1;
    const int spawned =
        ::posix_spawnp(&pid, "addr2line", &actions, &attributes, argv.data(), env.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    ::close(out[1]);
    if (spawned != 0) {
        ::close(out[0]);
        return "";
    }
    std::string output;
    const auto deadline = std::chrono::steady_clock::now() + addr2line_timeout;
    char buffer[4096];
    bool timed_out = false;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        pollfd readable{out[0], POLLIN, 0};
        if (left.count() <= 0 || ::poll(&readable, 1, static_cast<int>(left.count())) == 0) {
            timed_out = true;
            break;
        }
        const ssize_t n = ::read(out[0], buffer, sizeof buffer);
        if (n > 0) {
            output.append(buffer, static_cast<std::size_t>(n));
        } else if (n == 0 || errno != EINTR) {
            break;
        }
    }
    ::close(out[0]);
    if (timed_out) ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return timed_out || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ? std::string() : output;
}

// addr2line -a prints, for each address, a line "0x..." and then one (function, file:line)
// pair per frame, innermost inlined function first.
std::vector<std::vector<std::pair<std::string, std::string>>>
parse_addr2line(const std::string& output) {
    std::vector<std::vector<std::pair<std::string, std::string>>> groups;
    std::istringstream lines(output);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.rfind("0x", 0) == 0) {
            groups.emplace_back();
            continue;
        }
        std::string where;
        if (groups.empty() || !std::getline(lines, where)) break;
        groups.back().emplace_back(line, where);
    }
    return groups;
}

// `outermost`: the function the address really is in, as opposed to one inlined into it.
Frame make_frame(const std::string& function, const std::string& where, const Location& at,
                 bool outermost) {
    Frame frame;
    frame.object = at.object;
    frame.function = function;
    // In a shared library, name the function as the library exports it (clock_nanosleep, not
    // glibc's internal __GI___clock_nanosleep), and leave its source lines out: they belong to
    // the library's build, not to anything a reader here can open.
    // Without debug information addr2line, like dladdr, names the nearest symbol below the
    // address, which may be an unrelated function: then only the checked symbol counts.
    const bool has_debug_info = where.compare(0, 2, "??") != 0;
    if (!at.is_program) {
        if (outermost && !at.symbol.empty()) {
            frame.function = at.symbol;
            frame.exported = true;
        } else if (!has_debug_info) {
            frame.function = "??";
        }
        return frame;
    }
    frame.in_program = true;
    if (frame.function == "??" && !at.symbol.empty()) frame.function = at.symbol;
    const auto colon = where.rfind(':');
    if (colon != std::string::npos && where.compare(0, 2, "??") != 0) {
        frame.file = where.substr(0, colon);
        frame.line = std::atoi(where.c_str() + colon + 1); // "12 (discriminator 3)" reads as 12
        if (!source_root.empty() && frame.file.rfind(source_root, 0) == 0) {
            frame.file = frame.file.substr(source_root.size());
            frame.in_project = true;
        }
    }
    return frame;
}

} // namespace

std::string Frame::text() const {
    if (!file.empty()) return function + " at " + file + ":" + std::to_string(line);
    return function + " (" + object + ")";
}

std::vector<Frame> Symbolizer::frames(void* const* addresses, int count, bool first_is_exact) {
    // The lookup address of each frame, and which are not cached yet, grouped by file.
    std::vector<std::uintptr_t> lookups;
    std::map<std::string, std::vector<std::pair<std::uintptr_t, Location>>> missing;
    for (int i = 0; i < count; ++i) {
        auto address = reinterpret_cast<std::uintptr_t>(addresses[i]);
        if (address == 0) continue;
        if (i > 0 || !first_is_exact) address -= 1;
        lookups.push_back(address);
        if (cache_.count(address)) continue;
        Location where;
        if (!locate(address, where)) {
            char text[32];
            std::snprintf(text, sizeof text, "%p", reinterpret_cast<void*>(address));
            Frame unknown;
            unknown.function = "??";
            unknown.object = text;
            cache_[address] = {unknown};
            continue;
        }
        missing[where.path].emplace_back(address, where);
    }
    for (const auto& [path, entries] : missing) {
        std::vector<std::uintptr_t> offsets;
        for (const auto& entry : entries)
            offsets.push_back(entry.second.offset);
        const auto groups = parse_addr2line(run_addr2line(path, offsets));
        for (std::size_t i = 0; i < entries.size(); ++i) {
            const Location& where = entries[i].second;
            std::vector<Frame> resolved;
            if (i < groups.size())
                for (std::size_t j = 0; j < groups[i].size(); ++j)
                    resolved.push_back(make_frame(groups[i][j].first, groups[i][j].second, where,
                                                  j + 1 == groups[i].size()));
            if (resolved.empty()) resolved.push_back(make_frame("??", "??:0", where, true));
            if (resolved.back().function == "??") {
                char text[48];
                std::snprintf(text, sizeof text, "+0x%zx", static_cast<std::size_t>(where.offset));
                resolved.back().object = where.object + text;
            }
            cache_[entries[i].first] = std::move(resolved);
        }
    }
    std::vector<Frame> result;
    for (const auto address : lookups)
        for (const auto& frame : cache_[address])
            result.push_back(frame);
    return result;
}
