/* memory_update: replace a note of the user's memory under the same id.
 * The host answers for the call's own user (toolcage_memory_v1.update).
 * Details: {note_id}. */
#include <stdlib.h>

#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    const char *error =
        tch_relay(toolcage_memory_update, toolcage_memory_result, "memory", args, out);
    if (error) return error;
    char *id = tc_json_str(tc_json_get(tc_buf_cstr(out), "note_id"), NULL);
    if (id) {
        tc_detail_str("note_id", id);
        tc_result_artifact("memory", id, TC_MODIFIED);
        tc_result_display("Updated note %s", id);
    }
    free(id);
    return NULL;
}

int main(void) { return tc_tool_main(run); }
