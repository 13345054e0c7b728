/* schedule_run_output: a chunk of the full output of one run of the user.
 * The host answers for the call's own user (toolcage_scheduler_v1.run_output). */
#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    return tch_relay(toolcage_scheduler_run_output, toolcage_scheduler_result, "scheduler", args,
                     out);
}

int main(void) { return tc_tool_main(run); }
