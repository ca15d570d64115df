// strata.Port: filled in once the shm layer's ports are in libstrata.
#include "bindings.hpp"

namespace strata::python {

void bind_port(nb::module_& /*m*/) {}

}  // namespace strata::python
