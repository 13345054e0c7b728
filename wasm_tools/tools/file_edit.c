/*
 * file_edit: replace an exact snippet that occurs exactly once (or every occurrence).
 *
 * The edited text goes into the temporary file the host named (see tc_temp_create); the
 * host renames it over the file once this tool reported success.
 * Details: {path, replacements, bytes (the file's size now), previous_bytes}.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "toolcage.h"

#define EDIT_CAP (8u << 20)

static const char *run(const char *args, tc_buf *out) {
    size_t old_len = 0, new_len = 0;
    char *path = tc_arg_str(args, "path", NULL);
    char *old = tc_arg_str(args, "old_string", &old_len);
    char *new = tc_arg_str(args, "new_string", &new_len);
    int all = tc_arg_bool(args, "replace_all", 0);
    const char *error = NULL;
    char *shown = NULL;
    tc_buf data = {0}, edited = {0};
    if (!path || !old || !new) {
        error = tc_fail(out, TC_VALIDATION, "path, old_string and new_string are required");
        goto done;
    }
    shown = tc_name(path);
    if (old_len == 0) {
        error = tc_fail(out, TC_VALIDATION, "old_string must not be empty");
        goto done;
    }
    long long size = 0;
    int fd;
    int err = tc_open_replaced(path, &fd);
    if (!err) err = tc_read_fd(fd, EDIT_CAP, &data, &size);
    if (err == EFBIG) {
        error = tc_fail(out, TC_EXECUTION, "%s is too large to edit (%lld bytes; the cap is %u)",
                        shown, size, EDIT_CAP);
        goto done;
    }
    if (err) {
        error = tc_fail_errno(out, err, TC_WRITING, "cannot edit", path);
        goto done;
    }
    if (data.len && tc_is_binary(data.data, data.len)) {
        error = tc_fail(out, TC_EXECUTION, "%s is a binary file; file_edit only edits text", shown);
        goto done;
    }
    size_t count = 0;
    const char *p = data.data ? data.data : "", *end = p + data.len;
    for (const char *hit; (hit = memmem(p, (size_t)(end - p), old, old_len)) != NULL;) {
        count++;
        p = hit + old_len;
    }
    if (count == 0) {
        error = tc_fail(out, TC_EXECUTION,
                        "old_string was not found in %s (it must match exactly, including "
                        "whitespace and indentation)",
                        shown);
        goto done;
    }
    if (count > 1 && !all) {
        error = tc_fail(out, TC_EXECUTION,
                        "old_string occurs %zu times in %s; include more surrounding text to "
                        "make it unique, or pass replace_all=true",
                        count, shown);
        goto done;
    }
    p = data.data;
    for (const char *hit; (hit = memmem(p, (size_t)(end - p), old, old_len)) != NULL;) {
        tc_buf_put(&edited, p, (size_t)(hit - p));
        tc_buf_put(&edited, new, new_len);
        p = hit + old_len;
    }
    tc_buf_put(&edited, p, (size_t)(end - p));
    tc_temp t;
    if ((err = tc_temp_create(&t, args, path)) == 0) {
        err = tc_temp_write(&t, edited.data ? edited.data : "", edited.len);
        if (!err) err = tc_temp_finish(&t);
    }
    if (err) {
        error = tc_fail_errno(out, err, TC_WRITING, "cannot edit", path);
        tc_buf_puts(out, "; the file was left as it was");
        goto done;
    }
    tc_buf_printf(out, "replaced %zu occurrence%s in %s", count, count == 1 ? "" : "s", shown);
    tc_detail_str("path", shown);
    tc_detail_int("replacements", (long long)count);
    tc_detail_int("bytes", (long long)edited.len);
    tc_detail_int("previous_bytes", (long long)data.len);
    tc_result_artifact("file", path, TC_MODIFIED);
    tc_result_display("Edited %s (%zu replacement%s)", tc_base_name(shown), count,
                      count == 1 ? "" : "s");
done:
    tc_buf_free(&data);
    tc_buf_free(&edited);
    free(shown);
    free(path);
    free(old);
    free(new);
    return error;
}

int main(void) { return tc_tool_main(run); }
