/* memory_search: search the user's notes: hybrid (vector + keyword) when an embedder is configured, keyword-only otherwise.
 * The host answers for the call's own user (toolcage_memory_v1.search). */
#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    return tch_relay(toolcage_memory_search, toolcage_memory_result, "memory", args, out);
}

int main(void) { return tc_tool_main(run); }
