/* http_request: one HTTP request under the egress policy; status, headers and body. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolcage_host.h"

/* The result's details and display line (see toolcage.h), from the arguments and the
 * binding's answer: "GET example.com/api → 200 (1.2 KB)". */
static void put_details(const char *args, const char *result, double status, double redirects,
                        double size, int truncated) {
    char *method = tc_json_str(tc_json_get(args, "method"), NULL);
    char *url = tc_json_str(tc_json_get(args, "url"), NULL);
    char *final = tc_json_str(tc_json_get(result, "url"), NULL);
    char *content_type = tc_json_str(tc_json_get(result, "content_type"), NULL);
    const char *shown_method = method && *method ? method : "GET";
    tc_detail_int("status", (long long)status);
    tc_detail_str("method", shown_method);
    tc_detail_str("url", url ? url : "");
    tc_detail_str("final_url", final ? final : (url ? url : ""));
    tc_detail_str("content_type", content_type ? content_type : "");
    if (size >= 0) tc_detail_int("bytes", (long long)size);
    else tc_detail_json("bytes", "null");
    tc_detail_bool("truncated", truncated);
    tc_detail_int("redirects", (long long)redirects);

    tc_buf *shown = tc_display();
    tc_buf_puts(shown, shown_method);
    tc_buf_putc(shown, ' ');
    const char *host = url ? url : "";
    const char *scheme = strstr(host, "://");
    tc_buf_puts(shown, scheme ? scheme + 3 : host);
    tc_buf_puts(shown, " → ");
    tc_buf_int(shown, (long long)status);
    if (size >= 0) {
        tc_buf_puts(shown, " (");
        tc_buf_size(shown, (unsigned long long)size);
        tc_buf_putc(shown, ')');
    }
    free(method);
    free(url);
    free(final);
    free(content_type);
}

static const char *run(const char *args, tc_buf *out) {
    /* The arguments already have the request's shape; the host checks every field. */
    int32_t code;
    char *result = tch_http(args, strlen(args), &code);
    if (!result) {
        tc_buf_puts(out, code == TCH_EINVALID ? "url, method, headers or body has the wrong type"
                                             : "HTTP is not available to this tool");
        return code == TCH_EINVALID ? "validation_error" : "execution_error";
    }
    int ok = 0;
    const char *error_type = NULL;
    if (!tc_json_bool(tc_json_get(result, "ok"), &ok) || !ok) {
        error_type = tch_result_error(result, out);
        free(result);
        return error_type;
    }
    double status = 0, redirects = 0, size = -1;
    int truncated = 0;
    char line[160];
    tc_json_num(tc_json_get(result, "status"), &status);
    tc_json_num(tc_json_get(result, "redirects"), &redirects);
    if (!tc_json_num(tc_json_get(result, "size"), &size)) size = -1;
    tc_json_bool(tc_json_get(result, "truncated"), &truncated);
    put_details(args, result, status, redirects, size, truncated);
    char *url = tc_json_str(tc_json_get(result, "url"), NULL);
    snprintf(line, sizeof line, "HTTP %d", (int)status);
    tc_buf_puts(out, line);
    if (redirects > 0) {
        snprintf(line, sizeof line, " after %d redirect(s), final URL ", (int)redirects);
        tc_buf_puts(out, line);
        tc_buf_puts(out, url ? url : "?");
    }
    tc_buf_puts(out, "\n");
    free(url);

    const char *h = tc_json_ws(tc_json_get(result, "headers"));
    if (h && *h == '{') {
        h = tc_json_ws(h + 1);
        while (h && *h == '"') {
            char *name = tc_json_str(h, NULL);
            h = tc_json_ws(tc_json_skip(h));
            if (!h || *h != ':') break;
            h = tc_json_ws(h + 1);
            char *value = tc_json_str(h, NULL);
            if (name && value) {
                tc_buf_puts(out, name);
                tc_buf_puts(out, ": ");
                tc_buf_puts(out, value);
                tc_buf_puts(out, "\n");
            }
            free(name);
            free(value);
            h = tc_json_ws(tc_json_skip(h));
            if (h && *h == ',') h = tc_json_ws(h + 1);
        }
    }
    tc_buf_puts(out, "\n");
    size_t blen = 0;
    char *body = tc_json_str(tc_json_get(result, "body"), &blen);
    char *encoding = tc_json_str(tc_json_get(result, "body_encoding"), NULL);
    if (encoding && strcmp(encoding, "base64") == 0) {
        tc_buf_puts(out, "[binary body, base64-encoded]\n");
    }
    if (body) tc_buf_put(out, body, blen);
    if (truncated) {
        tc_buf_putc(out, '\n');
        tc_buf_truncation_marker(out, size >= 0 ? (long long)size : -1);
    }
    free(body);
    free(encoding);
    free(result);
    return NULL;
}

int main(void) { return tc_tool_main(run); }
