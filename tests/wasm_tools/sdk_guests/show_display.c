/* Sets its display line to the "line" argument (tc_result_display), for the SDK's display
 * rule to be compared with the host's. */
#include <stdlib.h>

#include "toolcage.h"

static const char *run(const char *args, tc_buf *out) {
    char *line = tc_arg_str(args, "line", NULL);
    if (!line) return tc_fail(out, TC_VALIDATION, "line must be a string");
    tc_result_display("%s", line);
    tc_buf_puts(out, "shown");
    free(line);
    return NULL;
}

int main(void) { return tc_tool_main(run); }
