// The wrapper of the docs' C++ fragments (```cpp fragment): the names a fragment
// uses without declaring them, at namespace scope, so that the fragment's own
// declarations (in the function below) shadow them. Compiled, never run.
#include <distreshape.hpp>
#include <mpi.h>

#include <cstdint>
#include <vector>

namespace dr = distreshape;

namespace {
int rank = 0, nranks = 1, py = 1, pz = 1;
std::int64_t n = 0, nx = 0, ny = 0, nz = 0;
std::vector<double> in;
std::vector<std::int64_t> lens;
} // namespace

void doc_fragment();
void doc_fragment()
{
@FRAGMENT@
}
