/* memory_update: replace a note of the user's memory under the same id.
 * The host answers for the call's own user (toolcage_memory_v1.update). */
#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    return tch_relay(toolcage_memory_update, toolcage_memory_result, "memory", args, out);
}

int main(void) { return tc_tool_main(run); }
