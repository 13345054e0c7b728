/* schedule_delete: delete a schedule of the user.
 * The host answers for the call's own user (toolcage_scheduler_v1.delete).
 * Details: {schedule_id}. */
#include <stdlib.h>

#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    const char *error =
        tch_relay(toolcage_scheduler_delete, toolcage_scheduler_result, "scheduler", args, out);
    if (error) return error;
    char *id = tc_json_str(tc_json_get(tc_buf_cstr(out), "schedule_id"), NULL);
    if (id) {
        tc_detail_str("schedule_id", id);
        tc_result_artifact("schedule", id, TC_DELETED);
        tc_result_display("Deleted schedule %s", id);
    }
    free(id);
    return NULL;
}

int main(void) { return tc_tool_main(run); }
