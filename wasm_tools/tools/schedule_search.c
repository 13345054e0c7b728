/* schedule_search: the user's schedules, filtered and paged.
 * The host answers for the call's own user (toolcage_scheduler_v1.search). */
#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    return tch_relay(toolcage_scheduler_search, toolcage_scheduler_result, "scheduler", args, out);
}

int main(void) { return tc_tool_main(run); }
