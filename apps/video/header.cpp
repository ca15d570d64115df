// The check of a received control header (common.hpp): every transport
// copies a peer's bytes into a Header, then asks this before using a field.
#include "common.hpp"

namespace strata::video {

Result<void> check_header(const Header& h, std::string_view what) {
    if (h.magic != Header::magic_value) {
        return make_error(Errc::corrupted, "{}: a control message without the pipeline's magic number", what);
    }
    return {};
}

}  // namespace strata::video
