/*
 * file_search: recursive search for a literal string (or a wildcard pattern) under a path.
 *
 * Built to make few WASI calls, since each one crosses into the host: directories are read
 * with fd_readdir into a 64 KiB buffer, entry types come from the directory entries (no
 * stat per file), files are opened with path_open relative to their directory's descriptor
 * (one path component for the host to resolve, and no fd_fdstat_get as wasi-libc's openat
 * does first) and read with one large read: three host trips per file (open, read, close), and a filestat for the hard-link check
 * of files with hits.
 * Symbolic links are not followed.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wasi/api.h>

#include "toolcage.h"

#define FILE_CAP (32u << 20)
#define LINE_CAP 240
#define DIRBUF (64u << 10)

typedef struct {
    const char *query;
    size_t query_len;
    char *wild; /* "*query*" in wildcard mode */
    const char *glob;
    int ignore_case;
    long long max;
    long long hits;
    long long files;
    long long skipped_large;
    long long skipped_links;
    tc_buf *out;
    tc_buf data, lower;
} search;

static void lower_ascii(char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] >= 'A' && s[i] <= 'Z') s[i] = (char)(s[i] + 32);
}

static void emit(search *s, const char *path, long long line, const char *text, size_t n) {
    if (n > LINE_CAP) n = LINE_CAP;
    tc_buf_puts(s->out, path);
    tc_buf_printf(s->out, ":%lld:", line);
    tc_buf_put(s->out, text, n);
    tc_buf_putc(s->out, '\n');
    s->hits++;
}

static void scan(search *s, const char *path) {
    const char *text = s->data.data, *end = text + s->data.len;
    if (memchr(text, '\0', s->data.len < 8192 ? s->data.len : 8192)) return; /* binary */
    const char *hay = text;
    if (s->ignore_case) {
        s->lower.len = 0;
        tc_buf_put(&s->lower, text, s->data.len);
        lower_ascii(s->lower.data, s->lower.len);
        hay = s->lower.data;
    }
    if (s->wild) {
        long long line = 1;
        for (const char *p = text; p < end && s->hits < s->max; line++) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            const char *stop = nl ? nl : end;
            size_t n = (size_t)(stop - p);
            char *copy = malloc(n + 1);
            memcpy(copy, hay + (p - text), n);
            copy[n] = '\0';
            if (fnmatch(s->wild, copy, 0) == 0) emit(s, path, line, p, n);
            free(copy);
            p = stop + 1;
        }
        return;
    }
    long long line = 1;
    const char *counted = text; /* newlines before here are in `line` */
    const char *p = hay;
    const char *hend = hay + s->data.len;
    while (s->hits < s->max) {
        const char *hit = memmem(p, (size_t)(hend - p), s->query, s->query_len);
        if (!hit) break;
        const char *at = text + (hit - hay);
        for (const char *q = counted; (q = memchr(q, '\n', (size_t)(at - q))) != NULL; q++) line++;
        const char *start = at;
        while (start > text && start[-1] != '\n') start--;
        const char *nl = memchr(at, '\n', (size_t)(end - at));
        const char *stop = nl ? nl : end;
        emit(s, path, line, start, (size_t)(stop - start));
        counted = stop;
        p = hay + (stop - text);
        if (p >= hend) break;
    }
}

/* Read all of `fd` into s->data; 0, or an errno value (EFBIG past the cap). */
static int slurp(search *s, int fd) {
    s->data.len = 0;
    if (s->data.cap < (1u << 20)) {
        tc_buf_put(&s->data, "", 0);
        char *grown = realloc(s->data.data, 1u << 20);
        if (!grown) abort();
        s->data.data = grown;
        s->data.cap = 1u << 20;
    }
    for (;;) {
        size_t room = s->data.cap - s->data.len - 1;
        ssize_t n = read(fd, s->data.data + s->data.len, room);
        if (n < 0) return errno;
        s->data.len += (size_t)n;
        /* A short read of a regular file is its end: saves the second, empty read. */
        if ((size_t)n < room) break;
        if (s->data.cap >= FILE_CAP) return EFBIG;
        char *grown = realloc(s->data.data, s->data.cap * 2);
        if (!grown) abort();
        s->data.data = grown;
        s->data.cap *= 2;
    }
    s->data.data[s->data.len] = '\0';
    return 0;
}

static void search_file(search *s, int fd, const char *path) {
    int err = slurp(s, fd);
    s->files++;
    if (err == EFBIG) s->skipped_large++;
    if (err) return;
    size_t out_len = s->out->len;
    long long hits = s->hits;
    scan(s, path);
    if (s->hits == hits) return;
    /* A hard-linked file may be the same file as one outside the mounts (the path policy
     * refuses one named directly), so its hits are dropped. Checked only for files with
     * hits: a stat of every file would cost a host trip per file. */
    __wasi_filestat_t st;
    if (__wasi_fd_filestat_get((__wasi_fd_t)fd, &st) != 0 || st.nlink > 1) {
        s->out->len = out_len;
        s->hits = hits;
        s->skipped_links++;
    }
}

/* path_open without wasi-libc's openat, which first asks fd_fdstat_get for the directory's
 * rights: one host trip less per file. Symbolic links are not followed. */
static int open_entry(int dirfd, const char *name, int dir) {
    const __wasi_rights_t rights = __WASI_RIGHTS_FD_READ | __WASI_RIGHTS_FD_READDIR |
                                   __WASI_RIGHTS_PATH_OPEN | __WASI_RIGHTS_FD_FILESTAT_GET;
    __wasi_fd_t fd;
    __wasi_errno_t err = __wasi_path_open((__wasi_fd_t)dirfd, 0, name,
                                          dir ? __WASI_OFLAGS_DIRECTORY : 0, rights,
                                          dir ? rights : 0, 0, &fd);
    return err ? -1 : (int)fd;
}

static void walk(search *s, int dirfd, tc_buf *path) {
    uint8_t *buf = malloc(DIRBUF);
    if (!buf) abort();
    __wasi_dircookie_t cookie = 0;
    size_t base = path->len;
    for (;;) {
        __wasi_size_t used = 0;
        if (__wasi_fd_readdir(dirfd, buf, DIRBUF, cookie, &used) != 0) break;
        size_t off = 0;
        int more = used == DIRBUF;
        while (off + sizeof(__wasi_dirent_t) <= used && s->hits < s->max) {
            __wasi_dirent_t ent;
            memcpy(&ent, buf + off, sizeof ent);
            size_t need = sizeof ent + ent.d_namlen;
            if (off + need > used) break; /* cut off: fetch again from this cookie */
            char *name = (char *)buf + off + sizeof ent;
            char saved = name[ent.d_namlen];
            name[ent.d_namlen] = '\0';
            off += need;
            cookie = ent.d_next;
            int is_dot = strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
            if (!is_dot && (ent.d_type == __WASI_FILETYPE_DIRECTORY ||
                            ent.d_type == __WASI_FILETYPE_REGULAR_FILE)) {
                int dir = ent.d_type == __WASI_FILETYPE_DIRECTORY;
                if (dir || !s->glob || fnmatch(s->glob, name, 0) == 0) {
                    path->len = base;
                    tc_buf_putc(path, '/');
                    tc_buf_put(path, name, ent.d_namlen);
                    int fd = open_entry(dirfd, name, dir);
                    if (fd >= 0) {
                        if (dir) walk(s, fd, path);
                        else search_file(s, fd, path->data);
                        (void)__wasi_fd_close((__wasi_fd_t)fd);
                    }
                }
            }
            name[ent.d_namlen] = saved;
        }
        if (!more || s->hits >= s->max) break;
    }
    path->len = base;
    if (path->data) path->data[base] = '\0';
    free(buf);
}

static const char *run(const char *args, tc_buf *out) {
    char *path = tc_arg_str(args, "path", NULL);
    size_t qlen = 0;
    char *query = tc_arg_str(args, "query", &qlen);
    char *glob = tc_arg_str(args, "glob", NULL);
    char *mode = tc_arg_str(args, "mode", NULL);
    const char *error = NULL;
    search s = {0};
    tc_buf where = {0};
    if (!path) path = strdup("/workspace");
    if (!query || qlen == 0) {
        error = tc_fail(out, TC_VALIDATION, "query must be a non-empty string");
        goto done;
    }
    s.query = query;
    s.query_len = qlen;
    s.glob = glob;
    s.ignore_case = tc_arg_bool(args, "ignore_case", 0);
    s.max = tc_arg_int(args, "max_results", 100);
    s.out = out;
    if (s.max < 1 || s.max > 5000) {
        error = tc_fail(out, TC_VALIDATION, "max_results must be between 1 and 5000");
        goto done;
    }
    if (s.ignore_case) lower_ascii(query, qlen);
    if (mode && strcmp(mode, "wildcard") == 0) {
        s.wild = malloc(qlen + 3);
        s.wild[0] = '*';
        memcpy(s.wild + 1, query, qlen);
        s.wild[qlen + 1] = '*';
        s.wild[qlen + 2] = '\0';
    } else if (mode && strcmp(mode, "literal") != 0) {
        error = tc_fail(out, TC_VALIDATION, "mode must be literal or wildcard, not %s", mode);
        goto done;
    }
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        error = tc_fail_errno(out, errno, "cannot search", path);
        goto done;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        size_t n = strlen(path);
        while (n > 1 && path[n - 1] == '/') n--;
        tc_buf_put(&where, path, n);
        walk(&s, fd, &where);
    } else {
        search_file(&s, fd, path);
    }
    close(fd);
    if (s.hits == 0) tc_buf_printf(out, "no matches in %lld files under %s\n", s.files, path);
    else if (s.hits >= s.max) tc_buf_printf(out, "[stopped at max_results=%lld]\n", s.max);
    if (s.skipped_links)
        tc_buf_printf(out, "[%lld hard-linked files were skipped]\n", s.skipped_links);
    if (s.skipped_large)
        tc_buf_printf(out, "[%lld files larger than %u bytes were skipped]\n", s.skipped_large,
                      FILE_CAP);
done:
    tc_buf_free(&s.data);
    tc_buf_free(&s.lower);
    tc_buf_free(&where);
    free(s.wild);
    free(path);
    free(query);
    free(glob);
    free(mode);
    return error;
}

int main(void) { return tc_tool_main(run); }
