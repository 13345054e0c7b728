/* memory_search: search the user's notes: hybrid (vector + keyword) when an embedder is configured, keyword-only otherwise.
 * The host answers for the call's own user (toolcage_memory_v1.search).
 * Details: {results, notes, note_ids, keyword_only}. */
#include <stdlib.h>
#include <string.h>

#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    const char *error =
        tch_relay(toolcage_memory_search, toolcage_memory_result, "memory", args, out);
    if (error) return error;
    const char *found = tc_buf_cstr(out);
    tc_buf ids = {0};
    size_t notes = 0;
    long long results = tc_json_pluck(found, "note_id", 100, &ids, &notes);
    if (results < 0) results = 0;
    tc_detail_int("results", results);
    tc_detail_int("notes", (long long)notes);
    tc_detail_json("note_ids", tc_buf_cstr(&ids));
    const char *rest = tc_json_skip(found);
    tc_detail_bool("keyword_only", rest && strstr(rest, "keyword-only") != NULL);
    tc_result_display("Found %lld result%s (%zu note%s)", results, results == 1 ? "" : "s", notes,
                      notes == 1 ? "" : "s");
    tc_buf_free(&ids);
    return NULL;
}

int main(void) { return tc_tool_main(run); }
