/* schedule_runs: the latest runs of a schedule of the user (metadata only).
 * The host answers for the call's own user (toolcage_scheduler_v1.runs).
 * Details: {schedule_id, runs, run_ids}. */
#include <stdlib.h>

#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    const char *error =
        tch_relay(toolcage_scheduler_runs, toolcage_scheduler_result, "scheduler", args, out);
    if (error) return error;
    const char *answer = tc_buf_cstr(out);
    tc_buf ids = {0};
    long long runs = tc_json_pluck(tc_json_get(answer, "runs"), "run_id", 20, &ids, NULL);
    if (runs < 0) runs = 0;
    char *id = tc_json_str(tc_json_get(answer, "schedule_id"), NULL);
    tc_detail_json("schedule_id", tc_json_get(answer, "schedule_id"));
    tc_detail_int("runs", runs);
    tc_detail_json("run_ids", tc_buf_cstr(&ids));
    tc_result_display("Listed %lld run%s of schedule %s", runs, runs == 1 ? "" : "s", id ? id : "");
    free(id);
    tc_buf_free(&ids);
    return NULL;
}

int main(void) { return tc_tool_main(run); }
