/*
 * file_delete: delete a file, or a directory (recursive=true for a non-empty one).
 *
 * A symbolic link is deleted itself, never what it points to (the path policy leaves the
 * last component of a path to delete unresolved).
 * Details: {path, type ("file", "link" or "directory"), entries (deleted in all)}.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "toolcage.h"

/* Delete `path` and everything under it, without following symbolic links. */
static int remove_tree(const char *path, size_t *count) {
    struct stat st;
    if (lstat(path, &st) != 0) return errno;
    if (!S_ISDIR(st.st_mode)) {
        if (unlink(path) != 0) return errno;
        (*count)++;
        return 0;
    }
    DIR *d = opendir(path);
    if (!d) return errno;
    tc_buf child = {0};
    struct dirent *e;
    int err = 0;
    while (!err && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        tc_path_join(&child, path, e->d_name);
        err = remove_tree(child.data, count);
        if (!err) {
            /* Entries shift under readdir when deleting; start over for a stable walk. */
            rewinddir(d);
        }
    }
    closedir(d);
    tc_buf_free(&child);
    if (err) return err;
    if (rmdir(path) != 0) return errno;
    (*count)++;
    return 0;
}

/* The details, artifact and display line of a deletion of `path` (shown as `shown`). */
static void describe(const char *path, const char *shown, const char *type, size_t entries) {
    tc_detail_str("path", shown);
    tc_detail_str("type", type);
    tc_detail_int("entries", (long long)entries);
    tc_result_artifact("file", path, TC_DELETED);
    if (entries > 1)
        tc_result_display("Deleted %s %s (%zu entries)", type, tc_base_name(shown), entries);
    else
        tc_result_display("Deleted %s %s", type, tc_base_name(shown));
}

static const char *run(const char *args, tc_buf *out) {
    char *path = tc_arg_str(args, "path", NULL);
    int recursive = tc_arg_bool(args, "recursive", 0);
    const char *error = NULL;
    char *shown = NULL;
    if (!path) {
        error = tc_fail(out, TC_VALIDATION, "path is required");
        goto done;
    }
    shown = tc_name(path);
    const char *rest = path + (path[0] == '/');
    if (!*rest || !strchr(rest, '/') || strchr(rest, '/')[1] == '\0') {
        error = tc_fail(out, TC_PERMISSION, "%s is a mount root; it cannot be deleted", shown);
        goto done;
    }
    struct stat st;
    if (lstat(path, &st) != 0) {
        error = tc_fail_errno(out, errno, TC_WRITING, "cannot delete", path);
        goto done;
    }
    if (!S_ISDIR(st.st_mode)) {
        if (unlink(path) != 0) {
            error = tc_fail_errno(out, errno, TC_WRITING, "cannot delete", path);
        } else {
            tc_buf_printf(out, "deleted %s %s", S_ISLNK(st.st_mode) ? "symbolic link" : "file",
                          shown);
            describe(path, shown, S_ISLNK(st.st_mode) ? "link" : "file", 1);
        }
        goto done;
    }
    if (rmdir(path) == 0) {
        tc_buf_printf(out, "deleted empty directory %s", shown);
        describe(path, shown, "directory", 1);
        goto done;
    }
    if (errno != ENOTEMPTY && errno != EEXIST) {
        error = tc_fail_errno(out, errno, TC_WRITING, "cannot delete", path);
        goto done;
    }
    if (!recursive) {
        error = tc_fail_errno(out, ENOTEMPTY, TC_WRITING, "cannot delete", path);
        goto done;
    }
    size_t count = 0;
    int err = remove_tree(path, &count);
    if (err) error = tc_fail_errno(out, err, TC_WRITING, "cannot delete", path);
    else {
        tc_buf_printf(out, "deleted directory %s (%zu entries)", shown, count);
        describe(path, shown, "directory", count);
    }
done:
    free(shown);
    free(path);
    return error;
}

int main(void) { return tc_tool_main(run); }
