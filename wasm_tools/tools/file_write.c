/*
 * file_write: write (overwrite, append or create) a text file.
 *
 * The new content -- for append, the old content followed by the text -- goes into the
 * temporary file the host named (see tc_temp_create); the host renames it over the target
 * once this tool reported success, so the target holds either its old or its new content.
 * Details: {path, bytes (written by this call), size (of the file now), mode, created}.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "toolcage.h"

/* mkdir -p of the parents of `path`, below its mount root (the first component). */
static int make_parents(const char *path) {
    char *copy = strdup(path);
    char *p = copy + (copy[0] == '/');
    char *slash = strchr(p, '/'); /* end of the mount root */
    int err = 0;
    while (slash && (slash = strchr(slash + 1, '/')) != NULL) {
        *slash = '\0';
        if (mkdir(copy, 0755) != 0 && errno != EEXIST) {
            err = errno;
            break;
        }
        *slash = '/';
    }
    free(copy);
    return err;
}

static const char *run(const char *args, tc_buf *out) {
    size_t len = 0;
    char *path = tc_arg_str(args, "path", NULL);
    char *content = tc_arg_str(args, "content", &len);
    char *mode = tc_arg_str(args, "mode", NULL);
    int parents = tc_arg_bool(args, "create_parents", 0);
    const char *error = NULL;
    char *shown = NULL;
    int append = 0, create = 0, from = -1, err;
    if (!path || !content) {
        error = tc_fail(out, TC_VALIDATION, "path and content are required");
        goto done;
    }
    shown = tc_name(path);
    if (mode && strcmp(mode, "append") == 0) append = 1;
    else if (mode && strcmp(mode, "create") == 0) create = 1;
    else if (mode && strcmp(mode, "overwrite") != 0) {
        char *bad = tc_name(mode);
        error = tc_fail(out, TC_VALIDATION, "mode must be overwrite, append or create, not %s",
                        bad);
        free(bad);
        goto done;
    }
    if (parents && (err = make_parents(path)) != 0) {
        error = tc_fail_errno(out, err, TC_WRITING, "cannot create the parent directories of",
                              path);
        goto done;
    }
    struct stat st;
    int existed = lstat(path, &st) == 0;
    if (create && existed) {
        error = tc_fail(out, TC_EXECUTION,
                        "%s already exists (mode=create never replaces a file; use "
                        "mode=overwrite or append)",
                        shown);
        goto done;
    }
    if (append && (err = tc_open_replaced(path, &from)) != 0 && err != ENOENT) {
        error = tc_fail_errno(out, err, TC_WRITING, "cannot append to", path);
        goto done;
    }
    tc_temp t;
    if ((err = tc_temp_create(&t, args, path)) == 0) {
        if (from >= 0) err = tc_temp_copy(&t, from);
        if (!err) err = tc_temp_write(&t, content, len);
        if (!err) err = tc_temp_finish(&t);
    }
    if (err == ENOENT && !parents) {
        error = tc_fail(out, TC_EXECUTION,
                        "cannot write: the directory of %s does not exist (pass "
                        "create_parents=true to create it)",
                        shown);
    } else if (err) {
        error = tc_fail_errno(out, err, TC_WRITING, "cannot write", path);
        tc_buf_puts(out, "; the file was left as it was");
    } else {
        tc_buf_printf(out, "wrote %zu bytes to %s", len, shown);
        long long size = (long long)len + (from >= 0 ? (long long)st.st_size : 0);
        tc_detail_str("path", shown);
        tc_detail_int("bytes", (long long)len);
        tc_detail_int("size", size);
        tc_detail_str("mode", append ? "append" : create ? "create" : "overwrite");
        tc_detail_bool("created", !existed);
        tc_result_artifact("file", path, existed ? TC_MODIFIED : TC_CREATED);
        tc_buf amount = {0};
        tc_buf_size(&amount, len);
        if (append && existed)
            tc_result_display("Appended %s to %s", tc_buf_cstr(&amount), tc_base_name(shown));
        else
            tc_result_display("%s %s (%s)", existed ? "Wrote" : "Created", tc_base_name(shown),
                              tc_buf_cstr(&amount));
        tc_buf_free(&amount);
    }
done:
    free(shown);
    free(path);
    free(content);
    free(mode);
    return error;
}

int main(void) { return tc_tool_main(run); }
