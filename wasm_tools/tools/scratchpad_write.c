/* scratchpad_write: replace this session's scratchpad.
 * The host answers for the call's own user and session (toolcage_scratchpad_v1.write).
 * Details: {item_count}. */
#include <stdlib.h>

#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    const char *error =
        tch_relay(toolcage_scratchpad_write, toolcage_scratchpad_result, "scratchpad", args, out);
    if (error) return error;
    double count = 0;
    tc_json_num(tc_json_get(tc_buf_cstr(out), "item_count"), &count);
    tc_detail_int("item_count", (long long)count);
    tc_result_display("Wrote the scratchpad (%lld item%s)", (long long)count,
                      count == 1 ? "" : "s");
    return NULL;
}

int main(void) { return tc_tool_main(run); }
