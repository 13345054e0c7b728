/* Answers with the text its "shape" argument names: every byte a JSON string escapes and
 * characters beyond ASCII ("tricky"), bytes that are not UTF-8 ("invalid"), or the tricky
 * text beside details and a display line ("detailed"). */
#include <string.h>

#include "toolcage.h"

static const char TRICKY[] = "say \"hi\" \\ back\nslash\ttab\r\x01\x1f del\x7f caf\xc3\xa9 "
                             "\xe2\x80\xa8 \xf0\x9f\x98\x80 \xef\xbf\xbd end";

static const char *run(const char *args, tc_buf *out) {
    const char *shape = tc_json_get(args, "shape");
    if (shape && strncmp(shape, "\"invalid\"", 9) == 0) {
        tc_buf_puts(out, "caf\xe9 \xff\xfe \xe2\x82 ok"); /* a lone byte, two, a cut sequence */
        return NULL;
    }
    tc_buf_put(out, TRICKY, sizeof TRICKY - 1);
    tc_buf_put(out, "\0nul", 4); /* a NUL byte inside the text */
    if (shape && strncmp(shape, "\"detailed\"", 10) == 0) {
        tc_detail_int("n", 7);
        tc_buf_puts(tc_display(), "Answered");
    }
    return NULL;
}

int main(void) { return tc_tool_main(run); }
