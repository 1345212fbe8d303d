#include "lessons/instruments/pinning/frame_names.hpp"

#include <backtrace.h>
#include <cstdint>
#include <cstdlib>
#include <cxxabi.h>
#include <dlfcn.h>
#include <memory>
#include <unistd.h>

namespace {

// The repository, with a trailing slash. A literal, not a std::string: the detector may still
// name frames while the program's static objects are being destroyed.
constexpr char source_root[] = SOURCE_ROOT;

std::string demangled(const char* name) {
    int status = 0;
    std::unique_ptr<char, decltype(&std::free)> text(
        abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
    return status == 0 ? text.get() : name;
}

std::string base_name(const char* path) {
    const std::string text = path ? path : "";
    return text.substr(text.rfind('/') + 1);
}

// Where the executable is loaded: this function is part of it (the detector links statically).
const void* program_base() {
    static const void* base = [] {
        Dl_info info{};
        return ::dladdr(reinterpret_cast<void*>(&program_base), &info) ? info.dli_fbase : nullptr;
    }();
    return base;
}

// Whether `file` is the program's own source rather than a system header, and if it is in this
// repository, makes it relative to it. Debug information names files as the compiler was given
// them: absolute, or relative to the build directory when a compiler cache such as ccache rewrote
// them ("../../pindemo/main.cpp"). A student's copy elsewhere keeps its absolute path.
bool is_own_source(std::string& file) {
    const std::string root = source_root;
    if (file.rfind(root, 0) == 0) { // first: a checkout may itself live under /usr
        file.erase(0, root.size());
        return true;
    }
    if (file.empty() || file.rfind("/usr/", 0) == 0) return false;
    if (file[0] == '/') return true;
    std::string relative = file;
    while (relative.rfind("../", 0) == 0)
        relative.erase(0, 3);
    if (::access((root + relative).c_str(), F_OK) != 0) return false;
    file = relative;
    return true;
}

backtrace_state* debug_info() {
    // A missing or unreadable debug section is normal (Debian's libraries): names then come from
    // the dynamic symbol table below.
    static backtrace_state* state = backtrace_create_state(
        nullptr, /*threaded=*/1, [](void*, const char*, int) {}, nullptr);
    return state;
}

// libbacktrace calls this once per function at `pc`, the inlined ones first.
int add_frame(void* data, std::uintptr_t, const char* file, int line, const char* function) {
    if (function == nullptr) return 0; // no debug information here
    Frame frame;
    frame.function = demangled(function);
    frame.file = file ? file : "";
    frame.line = line;
    frame.in_project = is_own_source(frame.file);
    static_cast<std::vector<Frame>*>(data)->push_back(std::move(frame));
    return 0;
}

} // namespace

std::string Frame::text() const {
    if (!file.empty()) return function + " at " + file + ":" + std::to_string(line);
    return function + (object.empty() ? "" : " (" + object + ")");
}

std::vector<Frame> name_frames(void* const* addresses, int count, bool first_is_exact) {
    std::vector<Frame> frames;
    for (int i = 0; i < count; ++i) {
        auto pc = reinterpret_cast<std::uintptr_t>(addresses[i]);
        if (i > 0 || !first_is_exact) --pc;
        Dl_info info{};
        const bool loaded = ::dladdr(reinterpret_cast<void*>(pc), &info) != 0;
        const bool in_program = loaded && info.dli_fbase == program_base();
        std::vector<Frame> here;
        // In the program: its debug information. In a shared library: the name it exports
        // (clock_nanosleep, poll), the same whether or not the library's debug files are there.
        if (in_program && debug_info() != nullptr)
            backtrace_pcinfo(
                debug_info(), pc, add_frame, [](void*, const char*, int) {}, &here);
        if (here.empty()) {
            here.emplace_back();
            here.back().function = loaded && info.dli_sname ? demangled(info.dli_sname) : "??";
        }
        for (Frame& frame : here) {
            if (loaded) frame.object = base_name(info.dli_fname);
            frame.in_program = in_program;
            frames.push_back(std::move(frame));
        }
    }
    return frames;
}
