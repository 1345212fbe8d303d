#include "downstream_client.hpp"

DownstreamClient::DownstreamClient(const std::string& base, int per_carrier)
    : base_(base), per_carrier_(per_carrier) {
    std::string path;
    split_url(base, host_, port_, path);
}

DownstreamClient::~DownstreamClient() {
    // TODO(ex11) task 1: close the idle connections.
}

bool DownstreamClient::get(const std::string& path, std::chrono::milliseconds timeout,
                           HttpResponse& response, std::string& why) {
    // TODO(ex11) task 1: take an idle connection of this carrier, or open one; keep it after.
    // Task 2: retry a kept connection's transport failure once, on a fresh one; say why in `why`.
    // Task 3: at most per_carrier_ open on this carrier; wait for one, up to the deadline.
    (void)timeout;
    (void)response;
    why = base_ + path + ": not written yet (TODO(ex11))";
    return false;
}

int DownstreamClient::open_here() {
    // TODO(ex11) task 3: how many connections has the calling carrier open?
    return -1;
}
