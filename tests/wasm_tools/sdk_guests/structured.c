/* Sets every structured part of its result with the SDK's calls, some of them given what
 * the SDK must refuse or repair; fails after setting them when "fail" is true. */
#include "toolcage.h"

static const char *run(const char *args, tc_buf *out) {
    tc_buf_puts(out, "ok");
    tc_result_details("{\"kept\": true }");
    tc_detail_int("n", -42);
    tc_detail_json("list", "[1, \"two\"]");
    tc_detail_json("word", "hello"); /* not JSON: left out */
    tc_detail_str("text", "caf\xe9"); /* not UTF-8: sent with U+FFFD */
    tc_buf_size(tc_display(), 1536);
    tc_buf_puts(tc_display(), " in\ttwo\nlines");
    tc_result_artifact("file", "/data/a\nb", TC_CREATED);
    if (tc_arg_bool(args, "fail", 0)) return tc_fail(out, TC_EXECUTION, "failed after all");
    return NULL;
}

int main(void) { return tc_tool_main(run); }
