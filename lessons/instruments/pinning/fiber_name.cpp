#include "lessons/instruments/pinning/fiber_name.hpp"

#include <boost/fiber/context.hpp>
#include <boost/fiber/fss.hpp>
#include <cstdio>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace {

struct NameTable {
    std::mutex mutex;
    std::unordered_map<const void*, std::string> names;
};

// Never destroyed: fibers may end while static objects are being torn down.
NameTable& table() {
    static auto* instance = new NameTable;
    return *instance;
}

// Lives in the fiber's fiber-specific storage; Boost deletes it when the fiber ends.
struct NameTag {
    explicit NameTag(const void* owner) : fiber(owner) {}
    NameTag(const NameTag&) = delete;
    NameTag& operator=(const NameTag&) = delete;
    const void* fiber;
    ~NameTag() {
        std::lock_guard<std::mutex> lock(table().mutex);
        table().names.erase(fiber);
    }
};

boost::fibers::fiber_specific_ptr<NameTag>& tags() {
    static auto* instance = new boost::fibers::fiber_specific_ptr<NameTag>;
    return *instance;
}

} // namespace

void name_this_fiber(std::string name) {
    const void* self = boost::fibers::context::active();
    {
        std::lock_guard<std::mutex> lock(table().mutex);
        table().names[self] = std::move(name);
    }
    if (tags().get() == nullptr) tags().reset(std::make_unique<NameTag>(self).release());
}

std::string fiber_name(const void* fiber) {
    std::lock_guard<std::mutex> lock(table().mutex);
    const auto found = table().names.find(fiber);
    return found == table().names.end() ? std::string() : found->second;
}

std::string fiber_display_name(const void* fiber) {
    std::string name = fiber_name(fiber);
    if (!name.empty()) return name;
    char text[40];
    std::snprintf(text, sizeof text, "unnamed fiber %p", fiber);
    return text;
}
