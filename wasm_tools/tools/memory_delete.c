/* memory_delete: delete a note of the user's memory, every chunk of it.
 * The host answers for the call's own user (toolcage_memory_v1.delete). */
#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    return tch_relay(toolcage_memory_delete, toolcage_memory_result, "memory", args, out);
}

int main(void) { return tc_tool_main(run); }
