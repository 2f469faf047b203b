/* The generated header must compile cleanly as strict C99
 * (-std=c99 -Wall -Wextra -Werror -pedantic) and be usable on its own. */
#include <distreshape.h>
#include <stdio.h>

int main(void)
{
    dr_plan_stats stats = {DR_PATH_LOCAL, 0, 0, 0, 0, 0};
    dr_dtype dtype = DR_DTYPE_BOOL;
    int64_t len = 0, offset = 0;
    dr_status status = dr_balanced_slab(10, 3, 0, &len, &offset);
    printf("distreshape %s (C99): %s, slab (%d, %d), split none = %d, max dims = %d, %d %d\n",
           dr_version(), dr_status_string(status), (int)len, (int)offset, DR_SPLIT_NONE,
           DR_MAX_DIMS, (int)dtype, (int)stats.path);
    return status == DR_SUCCESS && len == 4 && offset == 0 ? 0 : 1;
}
