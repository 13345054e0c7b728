/* get_current_time: the current time in an IANA zone, through the host's clock binding.
 * Details: {timezone, iso8601, unix, utc_offset}. */
#include <stdlib.h>
#include <string.h>

#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    const char *fmt_value = tc_json_get(args, "format");
    char *format = fmt_value ? tc_json_str(fmt_value, NULL) : NULL;
    const char *field = "iso8601";
    if (format && strcmp(format, "human_readable") == 0) {
        field = "human_readable";
    } else if (format && strcmp(format, "iso8601") != 0) {
        tc_buf_puts(out, "format must be \"iso8601\" or \"human_readable\"");
        free(format);
        return "validation_error";
    }
    free(format);

    tc_buf req = {0};
    tc_buf_puts(&req, "{\"timezone\":");
    const char *zone = tc_json_get(args, "timezone");
    size_t zlen = 0;
    char *zone_name = zone ? tc_json_str(zone, &zlen) : NULL;
    if (zone_name && zlen) tc_buf_json_string(&req, zone_name, zlen);
    else tc_buf_puts(&req, "null");
    tc_buf_puts(&req, "}");
    free(zone_name);

    int32_t code;
    char *result = tch_clock(req.data, req.len, &code);
    tc_buf_free(&req);
    if (!result) {
        tc_buf_puts(out, "the clock is not available to this tool");
        return "execution_error";
    }
    int ok = 0;
    const char *error_type = NULL;
    if (!tc_json_bool(tc_json_get(result, "ok"), &ok) || !ok) {
        error_type = tch_result_error(result, out);
    } else {
        size_t len = 0;
        char *when = tc_json_str(tc_json_get(result, field), &len);
        char *tz = tc_json_str(tc_json_get(result, "timezone"), NULL);
        if (when) tc_buf_put(out, when, len);
        if (tz && strcmp(field, "iso8601") == 0) {
            tc_buf_puts(out, " (");
            tc_buf_puts(out, tz);
            tc_buf_puts(out, ")");
        }
        static const char *const facts[] = {"timezone", "iso8601", "unix", "utc_offset"};
        for (size_t i = 0; i < sizeof facts / sizeof *facts; i++)
            tc_detail_json(facts[i], tc_json_get(result, facts[i]));
        char *iso = tc_json_str(tc_json_get(result, "iso8601"), NULL);
        tc_result_display("Current time in %s: %s", tz ? tz : "the host's zone", iso ? iso : "");
        free(iso);
        free(when);
        free(tz);
    }
    free(result);
    return error_type;
}

int main(void) { return tc_tool_main(run); }
