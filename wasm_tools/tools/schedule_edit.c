/* schedule_edit: change a schedule of the user; pause or resume it.
 * The host answers for the call's own user (toolcage_scheduler_v1.edit).
 * Details: {schedule_id, name, status, next_run_at}. */
#include <stdlib.h>

#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    const char *error =
        tch_relay(toolcage_scheduler_edit, toolcage_scheduler_result, "scheduler", args, out);
    if (error) return error;
    const char *answer = tc_buf_cstr(out);
    char *id = tc_json_str(tc_json_get(answer, "schedule_id"), NULL);
    char *name = tc_json_str(tc_json_get(answer, "name"), NULL);
    char *next = tc_json_str(tc_json_get(answer, "next_run_at"), NULL);
    tc_detail_json("schedule_id", tc_json_get(answer, "schedule_id"));
    tc_detail_json("name", tc_json_get(answer, "name"));
    tc_detail_json("status", tc_json_get(answer, "status"));
    tc_detail_json("next_run_at", tc_json_get(answer, "next_run_at"));
    if (id) tc_result_artifact("schedule", id, TC_MODIFIED);
    tc_result_display("Updated schedule %s (next run %s)", name ? name : id ? id : "",
                      next ? next : "none");
    free(id);
    free(name);
    free(next);
    return NULL;
}

int main(void) { return tc_tool_main(run); }
