/* file_write: write (overwrite, append or create) a text file. */
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
    int flags;
    if (!path || !content) {
        error = tc_fail(out, TC_VALIDATION, "path and content are required");
        goto done;
    }
    if (!mode || strcmp(mode, "overwrite") == 0) flags = O_CREAT | O_TRUNC;
    else if (strcmp(mode, "append") == 0) flags = O_CREAT | O_APPEND;
    else if (strcmp(mode, "create") == 0) flags = O_CREAT | O_EXCL;
    else {
        error = tc_fail(out, TC_VALIDATION, "mode must be overwrite, append or create, not %s",
                        mode);
        goto done;
    }
    if (parents) {
        int err = make_parents(path);
        if (err) {
            error = tc_fail_errno(out, err, "cannot create the parent directories of", path);
            goto done;
        }
    }
    int err = tc_write_file(path, content, len, flags);
    if (err == EEXIST) {
        error = tc_fail(out, TC_EXECUTION,
                        "%s already exists (mode=create never replaces a file; use "
                        "mode=overwrite or append)",
                        path);
    } else if (err == ENOENT && !parents) {
        error = tc_fail(out, TC_EXECUTION,
                        "cannot write: the directory of %s does not exist (pass "
                        "create_parents=true to create it)",
                        path);
    } else if (err) {
        error = tc_fail_errno(out, err, "cannot write", path);
    } else {
        tc_buf_printf(out, "wrote %zu bytes to %s", len, path);
    }
done:
    free(path);
    free(content);
    free(mode);
    return error;
}

int main(void) { return tc_tool_main(run); }
