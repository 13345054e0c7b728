/* memory_delete: delete a note of the user's memory, every chunk of it.
 * The host answers for the call's own user (toolcage_memory_v1.delete).
 * Details: {note_id}. */
#include <stdlib.h>

#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    const char *error =
        tch_relay(toolcage_memory_delete, toolcage_memory_result, "memory", args, out);
    if (error) return error;
    char *id = tc_json_str(tc_json_get(tc_buf_cstr(out), "note_id"), NULL);
    if (id) {
        tc_detail_str("note_id", id);
        tc_result_artifact("memory", id, TC_DELETED);
        tc_result_display("Deleted note %s", id);
    }
    free(id);
    return NULL;
}

int main(void) { return tc_tool_main(run); }
