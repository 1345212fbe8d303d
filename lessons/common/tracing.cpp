#include "lessons/common/tracing.hpp"

#include <stdexcept>

void install_trace_recorder(TraceRecorder& recorder) {
    TraceRecorder* none = nullptr;
    if (!installed_trace_recorder.compare_exchange_strong(none, &recorder))
        throw std::logic_error("a trace recorder is already installed in this process");
}

void trace_label_fiber(const char* format, ...) noexcept {
    TraceRecorder* recorder = trace_recorder();
    if (recorder == nullptr) return;
    std::va_list args;
    va_start(args, format);
    recorder->label_fiber(format, args);
    va_end(args);
}
