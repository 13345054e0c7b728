/* relay: the one guest of every tool that is a single host call and nothing else.
 * The tool's declaration names the call ("relay": "memory.save"); the host links
 * toolcage_relay_v1.call to that call of the tool's granted binding, and nothing else.
 * The arguments are the request; the answer's text is the result's, and its details,
 * display line and artifacts become the result's (tch_present). */
#include <stdlib.h>
#include <string.h>

#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    char *answer = NULL;
    int32_t n = toolcage_relay_call(args, (int32_t)strlen(args));
    const char *error = tch_answer_keep(n, toolcage_relay_result, "relay", out, &answer);
    if (!error) tch_present(answer);
    free(answer);
    return error;
}

int main(void) { return tc_tool_main(run); }
