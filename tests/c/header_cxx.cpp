// The generated header must compile cleanly as C++
// (-std=c++11 -Wall -Wextra -Werror -pedantic) and have C linkage.
#include <distreshape.h>
#include <cstdio>

int main()
{
    dr_plan_stats stats = {DR_PATH_EXCHANGE, 0, 0, 0, 0, 0};
    dr_plan *plan = nullptr;
    dr_plan_destroy(plan);
    int64_t len = 0, offset = 0;
    dr_status status = dr_balanced_slab(10, 3, 2, &len, &offset);
    std::printf("distreshape %s (C++): %s, slab (%d, %d), path %d\n", dr_version(),
                dr_status_string(status), static_cast<int>(len), static_cast<int>(offset),
                static_cast<int>(stats.path));
    return status == DR_SUCCESS && len == 3 && offset == 7 ? 0 : 1;
}
