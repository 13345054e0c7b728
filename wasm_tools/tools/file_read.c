/* file_read: a text file's contents, optionally a window of lines.
 * Details: {path, bytes, lines (in the file), offset, lines_returned, truncated (lines
 * follow the window)}. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <wasm_simd128.h>

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

/* Lines in [p, end): newlines, plus one for a last line without its newline. Sixteen
 * bytes at a time with wasm SIMD (wasmtime compiles it to the host's vector instructions):
 * a byte loop would cost a small file's read more than the rest of the tool. */
static __attribute__((target("simd128"))) long long count_lines(const char *p, const char *end) {
    long long n = 0;
    int last_open = p < end && end[-1] != '\n';
    const v128_t nl = wasm_i8x16_splat('\n');
    for (; p + 16 <= end; p += 16)
        n += __builtin_popcount(wasm_i8x16_bitmask(wasm_i8x16_eq(wasm_v128_load(p), nl)));
    for (; p < end; p++) n += *p == '\n';
    return n + last_open;
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
    long long returned = 0;
    if (limit >= 0) {
        for (; returned < limit && q < end; returned++) {
            const char *nl = memchr(q, '\n', (size_t)(end - q));
            q = nl ? nl + 1 : end;
        }
    } else {
        q = end;
    }
    if (latin1) latin1_to_utf8(out, p, (size_t)(q - p));
    else tc_buf_put(out, p, (size_t)(q - p));
    const char *start = data.data ? data.data : "";
    long long before = count_lines(start, p), lines = before + count_lines(p, end);
    if (limit < 0) returned = lines - before;
    tc_detail_str("path", shown);
    tc_detail_int("bytes", (long long)data.len);
    tc_detail_int("lines", lines);
    tc_detail_int("offset", offset);
    tc_detail_int("lines_returned", returned);
    tc_detail_bool("truncated", q < end);
    /* "Read NAME (N lines)", "Read lines A-B of NAME (N lines)" or "Read no lines of NAME
     * at offset K (N lines)", built without printf: this tool is called often. */
    tc_buf *display = tc_display();
    tc_buf_puts(display, "Read ");
    if (returned != lines) {
        tc_buf_puts(display, returned ? "lines " : "no lines of ");
        if (returned) {
            tc_buf_int(display, before + 1);
            tc_buf_putc(display, '-');
            tc_buf_int(display, before + returned);
            tc_buf_puts(display, " of ");
        }
    }
    tc_buf_puts(display, tc_base_name(shown));
    if (returned != lines && !returned) {
        tc_buf_puts(display, " at offset ");
        tc_buf_int(display, offset);
    }
    tc_buf_puts(display, " (");
    tc_buf_int(display, lines);
    tc_buf_puts(display, lines == 1 ? " line)" : " lines)");
done:
    tc_buf_free(&data);
    free(shown);
    free(path);
    free(encoding);
    return error;
}

int main(void) { return tc_tool_main(run); }
