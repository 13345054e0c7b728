/* web_search: query the operator's search provider (host-side) and list title/url/snippet. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    size_t qlen = 0;
    char *query = tc_json_str(tc_json_get(args, "query"), &qlen);
    if (!query || !qlen) {
        free(query);
        tc_buf_puts(out, "query must be a non-empty string");
        return "validation_error";
    }
    double count = 5;
    const char *cv = tc_json_get(args, "count");
    if (cv && !tc_json_num(cv, &count)) count = 5;
    if (count < 1) count = 1;
    if (count > 20) count = 20;
    tc_buf req = {0};
    char num[16];
    tc_buf_puts(&req, "{\"query\":");
    tc_buf_json_string(&req, query, qlen);
    snprintf(num, sizeof num, "%d", (int)count);
    tc_buf_puts(&req, ",\"count\":");
    tc_buf_puts(&req, num);
    tc_buf_puts(&req, "}");

    int32_t code;
    char *result = tch_search(req.data, req.len, &code);
    tc_buf_free(&req);
    if (!result) {
        free(query);
        tc_buf_puts(out, "web search is not available to this tool");
        return "execution_error";
    }
    int ok = 0;
    const char *error_type = NULL;
    if (!tc_json_bool(tc_json_get(result, "ok"), &ok) || !ok) {
        error_type = tch_result_error(result, out);
    } else {
        const char *p = tc_json_ws(tc_json_get(result, "results"));
        int n = 0;
        if (p && *p == '[') {
            p = tc_json_ws(p + 1);
            while (p && *p == '{') {
                char *title = tc_json_str(tc_json_get(p, "title"), NULL);
                char *url = tc_json_str(tc_json_get(p, "url"), NULL);
                char *snippet = tc_json_str(tc_json_get(p, "snippet"), NULL);
                snprintf(num, sizeof num, "%d. ", ++n);
                tc_buf_puts(out, num);
                tc_buf_puts(out, title ? title : "(untitled)");
                tc_buf_puts(out, "\n   ");
                tc_buf_puts(out, url ? url : "");
                if (snippet && *snippet) {
                    tc_buf_puts(out, "\n   ");
                    tc_buf_puts(out, snippet);
                }
                tc_buf_puts(out, "\n");
                free(title);
                free(url);
                free(snippet);
                p = tc_json_ws(tc_json_skip(p));
                if (p && *p == ',') p = tc_json_ws(p + 1);
            }
        }
        tc_buf urls = {0};
        tc_json_pluck(tc_json_get(result, "results"), "url", 20, &urls, NULL);
        tc_detail_strn("query", query, qlen);
        tc_detail_int("results", n);
        tc_detail_json("urls", tc_buf_cstr(&urls));
        tc_buf_free(&urls);
        tc_buf *shown = tc_display();
        tc_buf_puts(shown, "Searched \"");
        tc_buf_put(shown, query, qlen);
        tc_buf_puts(shown, "\" (");
        tc_buf_int(shown, n);
        tc_buf_puts(shown, n == 1 ? " result)" : " results)");
        if (n == 0) {
            tc_buf_puts(out, "No results for: ");
            tc_buf_puts(out, query);
        }
    }
    free(query);
    free(result);
    return error_type;
}

int main(void) { return tc_tool_main(run); }
