// The proc backend is not built yet; explicit requests for it report it.
#include "backends.hpp"

namespace strata::monitor::detail {

Result<std::unique_ptr<Monitor>> start_proc(const Options& /*options*/, int /*cores*/, Monitor::Callback /*cb*/) {
    return make_error(Errc::unsupported, "Monitor::start: backend=proc: not built yet");
}

}  // namespace strata::monitor::detail
