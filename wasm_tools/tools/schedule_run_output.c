/* schedule_run_output: a chunk of the full output of one run of the user.
 * The host answers for the call's own user (toolcage_scheduler_v1.run_output).
 * Details: {run_id, offset, chars, remaining, total_chars}. */
#include <stdlib.h>

#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    const char *error = tch_relay(toolcage_scheduler_run_output, toolcage_scheduler_result,
                                  "scheduler", args, out);
    if (error) return error;
    const char *chunk = tc_buf_cstr(out);
    double offset = 0, remaining = 0, total = 0;
    tc_json_num(tc_json_get(chunk, "offset"), &offset);
    tc_json_num(tc_json_get(chunk, "remaining"), &remaining);
    tc_json_num(tc_json_get(chunk, "total_chars"), &total);
    long long chars = (long long)(total - remaining - offset);
    char *id = tc_json_str(tc_json_get(chunk, "run_id"), NULL);
    tc_detail_json("run_id", tc_json_get(chunk, "run_id"));
    tc_detail_int("offset", (long long)offset);
    tc_detail_int("chars", chars < 0 ? 0 : chars);
    tc_detail_int("remaining", (long long)remaining);
    tc_detail_int("total_chars", (long long)total);
    tc_result_display("Read characters %lld-%lld of the output of run %s (%lld in all)",
                      (long long)offset, (long long)(total - remaining), id ? id : "",
                      (long long)total);
    free(id);
    return NULL;
}

int main(void) { return tc_tool_main(run); }
