/* memory_save: save a note in the user's memory.
 * The host answers for the call's own user (toolcage_memory_v1.save).
 * Details: {note_id}. */
#include <stdlib.h>

#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    const char *error =
        tch_relay(toolcage_memory_save, toolcage_memory_result, "memory", args, out);
    if (error) return error;
    char *id = tc_json_str(tc_json_get(tc_buf_cstr(out), "note_id"), NULL);
    if (id) {
        tc_detail_str("note_id", id);
        tc_result_artifact("memory", id, TC_CREATED);
        tc_result_display("Saved note %s", id);
    }
    free(id);
    return NULL;
}

int main(void) { return tc_tool_main(run); }
