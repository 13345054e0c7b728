/* schedule_search: the user's schedules, filtered and paged.
 * The host answers for the call's own user (toolcage_scheduler_v1.search).
 * Details: {total, returned, remaining, schedule_ids}. */
#include <stdlib.h>

#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    const char *error =
        tch_relay(toolcage_scheduler_search, toolcage_scheduler_result, "scheduler", args, out);
    if (error) return error;
    const char *page = tc_buf_cstr(out);
    tc_buf ids = {0};
    const char *schedules = tc_json_get(page, "schedules");
    long long returned = tc_json_pluck(schedules, "schedule_id", 50, &ids, NULL);
    double total = 0, remaining = 0;
    tc_json_num(tc_json_get(page, "total"), &total);
    tc_json_num(tc_json_get(page, "remaining"), &remaining);
    tc_detail_int("total", (long long)total);
    tc_detail_int("returned", returned < 0 ? 0 : returned);
    tc_detail_int("remaining", (long long)remaining);
    tc_detail_json("schedule_ids", tc_buf_cstr(&ids));
    tc_result_display("Found %lld schedule%s (showing %lld)", (long long)total,
                      total == 1 ? "" : "s", returned < 0 ? 0 : returned);
    tc_buf_free(&ids);
    return NULL;
}

int main(void) { return tc_tool_main(run); }
