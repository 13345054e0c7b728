/* scratchpad_read: read this session's scratchpad.
 * The host answers for the call's own user and session (toolcage_scratchpad_v1.read).
 * Details: {item_count, updated_at}. */
#include <stdlib.h>

#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    const char *error =
        tch_relay(toolcage_scratchpad_read, toolcage_scratchpad_result, "scratchpad", args, out);
    if (error) return error;
    const char *pad = tc_buf_cstr(out);
    double count = 0;
    tc_json_num(tc_json_get(pad, "item_count"), &count);
    tc_detail_int("item_count", (long long)count);
    tc_detail_json("updated_at", tc_json_get(pad, "updated_at"));
    tc_result_display("Read the scratchpad (%lld item%s)", (long long)count, count == 1 ? "" : "s");
    return NULL;
}

int main(void) { return tc_tool_main(run); }
