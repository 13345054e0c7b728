/* memory_save: save a note in the user's memory.
 * The host answers for the call's own user (toolcage_memory_v1.save). */
#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    return tch_relay(toolcage_memory_save, toolcage_memory_result, "memory", args, out);
}

int main(void) { return tc_tool_main(run); }
