/* scratchpad_read: read this session's scratchpad.
 * The host answers for the call's own user and session (toolcage_scratchpad_v1.read). */
#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    return tch_relay(toolcage_scratchpad_read, toolcage_scratchpad_result, "scratchpad", args, out);
}

int main(void) { return tc_tool_main(run); }
