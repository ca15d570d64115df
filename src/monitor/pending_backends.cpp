// The proc and ebpf backends are not built yet; auto and explicit requests for
// them report it.
#include "backends.hpp"

namespace strata::monitor::detail {

Result<std::unique_ptr<Monitor>> start_proc(const Options& /*options*/, int /*cores*/, Monitor::Callback /*cb*/) {
    return make_error(Errc::unsupported, "Monitor::start: backend=proc: not built yet");
}

Result<std::unique_ptr<Monitor>> start_ebpf(const Options& /*options*/, int /*cores*/, Monitor::Callback /*cb*/) {
    return make_error(Errc::unsupported, "Monitor::start: backend=ebpf: not built yet");
}

Result<std::string> probe_ebpf() {
    return make_error(Errc::unsupported, "the ebpf backend is not built yet");
}

}  // namespace strata::monitor::detail
