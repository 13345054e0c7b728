/* file_list: the entries of a directory (type, size, path), optionally recursively. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "toolcage.h"

#define MAX_ENTRIES 5000

typedef struct {
    tc_buf *out;
    size_t count;
    int truncated;
} listing;

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* List `dir` (host-visible path) with names relative to the listing root `rel`. */
static int list_dir(listing *l, const char *dir, const char *rel, int depth) {
    DIR *d = opendir(dir);
    if (!d) return errno;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **grown = realloc(names, cap * sizeof *names);
            if (!grown) abort();
            names = grown;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    tc_buf path = {0}, sub = {0};
    for (size_t i = 0; i < n; i++) {
        if (l->count >= MAX_ENTRIES) {
            l->truncated = 1;
            break;
        }
        tc_path_join(&path, dir, names[i]);
        sub.len = 0;
        if (*rel) {
            tc_buf_puts(&sub, rel);
            tc_buf_putc(&sub, '/');
        }
        tc_buf_puts(&sub, names[i]);
        struct stat st;
        const char *type = "other";
        long long size = -1;
        if (lstat(path.data, &st) == 0) {
            if (S_ISDIR(st.st_mode)) type = "dir";
            else if (S_ISREG(st.st_mode)) type = "file", size = (long long)st.st_size;
            else if (S_ISLNK(st.st_mode)) type = "link";
        }
        if (size >= 0) tc_buf_printf(l->out, "%s\t%lld\t%s\n", type, size, sub.data);
        else tc_buf_printf(l->out, "%s\t-\t%s%s\n", type, sub.data, strcmp(type, "dir") ? "" : "/");
        l->count++;
        if (depth > 1 && strcmp(type, "dir") == 0) list_dir(l, path.data, sub.data, depth - 1);
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    tc_buf_free(&path);
    tc_buf_free(&sub);
    return 0;
}

static const char *run(const char *args, tc_buf *out) {
    char *path = tc_arg_str(args, "path", NULL);
    long long depth = tc_arg_int(args, "depth", 1);
    const char *error = NULL;
    if (!path) path = strdup("/workspace");
    if (depth < 1 || depth > 16) {
        error = tc_fail(out, TC_VALIDATION, "depth must be between 1 and 16, not %lld", depth);
        goto done;
    }
    struct stat st;
    if (stat(path, &st) != 0) {
        error = tc_fail_errno(out, errno, "cannot list", path);
        goto done;
    }
    if (!S_ISDIR(st.st_mode)) {
        tc_buf_printf(out, "file\t%lld\t%s\n", (long long)st.st_size, path);
        goto done;
    }
    listing l = {out, 0, 0};
    int err = list_dir(&l, path, "", (int)depth);
    if (err) {
        error = tc_fail_errno(out, err, "cannot list", path);
        goto done;
    }
    if (l.count == 0) tc_buf_printf(out, "(%s is empty)\n", path);
    if (l.truncated) tc_buf_printf(out, "[listing stopped at %d entries]\n", MAX_ENTRIES);
done:
    free(path);
    return error;
}

int main(void) { return tc_tool_main(run); }
