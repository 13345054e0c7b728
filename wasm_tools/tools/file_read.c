/* file_read: a text file's contents, optionally a window of lines. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "toolcage.h"

#define READ_CAP (8u << 20) /* bytes; larger files are refused */

static void latin1_to_utf8(tc_buf *out, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            tc_buf_putc(out, (char)c);
        } else {
            char u[2] = {(char)(0xC0 | (c >> 6)), (char)(0x80 | (c & 0x3F))};
            tc_buf_put(out, u, 2);
        }
    }
}

static const char *run(const char *args, tc_buf *out) {
    char *path = tc_arg_str(args, "path", NULL);
    char *encoding = tc_arg_str(args, "encoding", NULL);
    long long offset = tc_arg_int(args, "offset", 0);
    long long limit = tc_arg_int(args, "limit", -1);
    const char *error = NULL;
    char *shown = NULL;
    tc_buf data = {0};
    int latin1 = 0;
    if (!path) {
        error = tc_fail(out, TC_VALIDATION, "path is required");
        goto done;
    }
    shown = tc_name(path);
    if (encoding && strcmp(encoding, "utf-8") != 0 && strcmp(encoding, "utf8") != 0) {
        if (strcmp(encoding, "latin-1") == 0 || strcmp(encoding, "iso-8859-1") == 0) {
            latin1 = 1;
        } else {
            char *bad = tc_name(encoding);
            error = tc_fail(out, TC_VALIDATION, "encoding must be utf-8 or latin-1, not %s", bad);
            free(bad);
            goto done;
        }
    }
    long long size = 0;
    int err = tc_read_file(path, READ_CAP, &data, &size);
    if (err == EFBIG) {
        error = tc_fail(out, TC_EXECUTION,
                        "%s is too large to read (%lld bytes; the cap is %u bytes); use "
                        "file_search to find the part you need",
                        shown, size, READ_CAP);
        goto done;
    }
    if (err) {
        error = tc_fail_errno(out, err, TC_READING, "cannot read", path);
        goto done;
    }
    if (data.len && (memchr(data.data, '\0', data.len < 8192 ? data.len : 8192) ||
                     (!latin1 && !tc_is_utf8(data.data, data.len)))) {
        error = tc_fail(out, TC_EXECUTION,
                        "%s is a binary file (%zu bytes), not %s text; file_read only returns "
                        "text: use file_list for its size, or another tool that understands "
                        "the format",
                        shown, data.len, latin1 ? "latin-1" : "UTF-8");
        goto done;
    }
    /* The window [offset, offset + limit) of lines (0-based). */
    const char *p = data.data ? data.data : "";
    const char *end = p + data.len;
    for (long long line = 0; line < offset && p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    const char *q = p;
    if (limit >= 0) {
        for (long long line = 0; line < limit && q < end; line++) {
            const char *nl = memchr(q, '\n', (size_t)(end - q));
            q = nl ? nl + 1 : end;
        }
    } else {
        q = end;
    }
    if (latin1) latin1_to_utf8(out, p, (size_t)(q - p));
    else tc_buf_put(out, p, (size_t)(q - p));
done:
    tc_buf_free(&data);
    free(shown);
    free(path);
    free(encoding);
    return error;
}

int main(void) { return tc_tool_main(run); }
