/* schedule_runs: the latest runs of a schedule of the user (metadata only).
 * The host answers for the call's own user (toolcage_scheduler_v1.runs). */
#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    return tch_relay(toolcage_scheduler_runs, toolcage_scheduler_result, "scheduler", args, out);
}

int main(void) { return tc_tool_main(run); }
