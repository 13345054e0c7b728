/*
 * file_list: the entries of a directory (type, size, path), optionally recursively.
 * Names are shown in the SDK's escaped form (tc_buf_put_name), one entry per line.
 */
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
    size_t unlisted; /* subdirectories that could not be listed, named in `why` */
    tc_buf why;
} listing;

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n) {
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* The entry names of `dir`, or an errno value. The host reads every entry's metadata for
 * each batch of fd_readdir (opendir reads the first batch), so an entry removed meanwhile
 * (another call's temporary file) fails the whole read with ENOENT: the directory is then
 * read again from its start. */
#define READ_ATTEMPTS 64
static int read_names(const char *dir, char ***out, size_t *count) {
    int err = 0;
    for (int attempt = 0; attempt < READ_ATTEMPTS; attempt++) {
        DIR *d = opendir(dir);
        if (!d) {
            err = errno;
            if (err != ENOENT) break;
            continue;
        }
        char **names = NULL;
        size_t n = 0, cap = 0;
        struct dirent *e;
        errno = 0;
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
        err = errno;
        closedir(d);
        if (!err) {
            *out = names;
            *count = n;
            return 0;
        }
        free_names(names, n);
        if (err != ENOENT) break;
    }
    return err;
}

/* List `dir` (host-visible path) with names relative to the listing root `rel`. */
static int list_dir(listing *l, const char *dir, const char *rel, int depth) {
    char **names = NULL;
    size_t n = 0;
    int err = read_names(dir, &names, &n);
    if (err) return err;
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
        if (size >= 0) tc_buf_printf(l->out, "%s\t%lld\t", type, size);
        else tc_buf_printf(l->out, "%s\t-\t", type);
        tc_buf_put_name(l->out, sub.data, sub.len);
        tc_buf_puts(l->out, strcmp(type, "dir") ? "\n" : "/\n");
        l->count++;
        int err = depth > 1 && strcmp(type, "dir") == 0 ? list_dir(l, path.data, sub.data, depth - 1)
                                                       : 0;
        if (err && l->unlisted++ < 10) {
            tc_buf reason = {0};
            tc_fail_errno(&reason, err, TC_READING, "", sub.data);
            if (l->why.len) tc_buf_puts(&l->why, ", ");
            tc_buf_puts(&l->why, reason.data + 2); /* past the empty "what: " */
            tc_buf_free(&reason);
        }
    }
    free_names(names, n);
    tc_buf_free(&path);
    tc_buf_free(&sub);
    return 0;
}

static const char *run(const char *args, tc_buf *out) {
    char *path = tc_arg_str(args, "path", NULL);
    long long depth = tc_arg_int(args, "depth", 1);
    const char *error = NULL;
    if (!path) path = strdup("/workspace");
    char *shown = tc_name(path);
    if (depth < 1 || depth > 16) {
        error = tc_fail(out, TC_VALIDATION, "depth must be between 1 and 16, not %lld", depth);
        goto done;
    }
    struct stat st;
    if (stat(path, &st) != 0) {
        error = tc_fail_errno(out, errno, TC_READING, "cannot list", path);
        goto done;
    }
    if (!S_ISDIR(st.st_mode)) {
        tc_buf_printf(out, "file\t%lld\t%s\n", (long long)st.st_size, shown);
        goto done;
    }
    listing l = {out, 0, 0, 0, {0}};
    int err = list_dir(&l, path, "", (int)depth);
    if (err) {
        error = tc_fail_errno(out, err, TC_READING, "cannot list", path);
        goto done;
    }
    if (l.count == 0) tc_buf_printf(out, "(%s is empty)\n", shown);
    if (l.truncated) tc_buf_printf(out, "[listing stopped at %d entries]\n", MAX_ENTRIES);
    if (l.unlisted)
        tc_buf_printf(out, "[%zu directories could not be listed: %s%s]\n", l.unlisted, l.why.data,
                      l.unlisted > 10 ? ", ..." : "");
    tc_buf_free(&l.why);
done:
    free(shown);
    free(path);
    return error;
}

int main(void) { return tc_tool_main(run); }
