/* scratchpad_clear: empty this session's scratchpad.
 * The host answers for the call's own user and session (toolcage_scratchpad_v1.clear).
 * Details: {cleared}. */
#include <stdlib.h>

#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    const char *error =
        tch_relay(toolcage_scratchpad_clear, toolcage_scratchpad_result, "scratchpad", args, out);
    if (error) return error;
    int cleared = 0;
    tc_json_bool(tc_json_get(tc_buf_cstr(out), "cleared"), &cleared);
    tc_detail_bool("cleared", cleared);
    tc_result_display(cleared ? "Cleared the scratchpad" : "The scratchpad was already empty");
    return NULL;
}

int main(void) { return tc_tool_main(run); }
