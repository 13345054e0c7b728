/* file_edit: replace an exact snippet that occurs exactly once (or every occurrence). */
#include <errno.h>
#include <fcntl.h>
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
    tc_buf data = {0}, edited = {0};
    if (!path || !old || !new) {
        error = tc_fail(out, TC_VALIDATION, "path, old_string and new_string are required");
        goto done;
    }
    if (old_len == 0) {
        error = tc_fail(out, TC_VALIDATION, "old_string must not be empty");
        goto done;
    }
    long long size = 0;
    int err = tc_read_file(path, EDIT_CAP, &data, &size);
    if (err == EFBIG) {
        error = tc_fail(out, TC_EXECUTION, "%s is too large to edit (%lld bytes; the cap is %u)",
                        path, size, EDIT_CAP);
        goto done;
    }
    if (err) {
        error = tc_fail_errno(out, err, "cannot edit", path);
        goto done;
    }
    if (data.len && tc_is_binary(data.data, data.len)) {
        error = tc_fail(out, TC_EXECUTION, "%s is a binary file; file_edit only edits text", path);
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
                        path);
        goto done;
    }
    if (count > 1 && !all) {
        error = tc_fail(out, TC_EXECUTION,
                        "old_string occurs %zu times in %s; include more surrounding text to "
                        "make it unique, or pass replace_all=true",
                        count, path);
        goto done;
    }
    p = data.data;
    for (const char *hit; (hit = memmem(p, (size_t)(end - p), old, old_len)) != NULL;) {
        tc_buf_put(&edited, p, (size_t)(hit - p));
        tc_buf_put(&edited, new, new_len);
        p = hit + old_len;
    }
    tc_buf_put(&edited, p, (size_t)(end - p));
    err = tc_write_file(path, edited.data, edited.len, O_TRUNC);
    if (err) {
        error = tc_fail_errno(out, err, "cannot edit", path);
        goto done;
    }
    tc_buf_printf(out, "replaced %zu occurrence%s in %s", count, count == 1 ? "" : "s", path);
done:
    tc_buf_free(&data);
    tc_buf_free(&edited);
    free(path);
    free(old);
    free(new);
    return error;
}

int main(void) { return tc_tool_main(run); }
