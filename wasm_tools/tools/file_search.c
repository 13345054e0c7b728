/*
 * file_search: recursive search for a literal string (or a wildcard pattern) under a path.
 *
 * Built to make few WASI calls, since each one crosses into the host: directories are read
 * with fd_readdir into a 64 KiB buffer, entry types come from the directory entries (no
 * stat per file), files are opened with path_open relative to their directory's descriptor
 * (one path component for the host to resolve, and no fd_fdstat_get as wasi-libc's openat
 * does first) and read a window of 1 MiB at a time: three host trips for a file under
 * 1 MiB (open, read, close), and a filestat for the hard-link check of files with hits.
 * Memory stays bounded whatever the file sizes; of a file larger than FILE_CAP only the
 * first FILE_CAP bytes are searched, and the result names it.
 * Symbolic links are not followed. Paths are shown in the SDK's escaped form
 * (tc_buf_put_name); the text of a hit is the file's own.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wasi/api.h>

#include "toolcage.h"

#define WINDOW (1u << 20)           /* bytes of a file in memory at a time */
#define FILE_CAP (256ull << 20)      /* bytes searched per file; the rest of a larger one is not */
#define LINE_CAP 240
#define DIRBUF (64u << 10)
#define NAMED 10 /* files named per note; the rest are counted */

/* Files a note of the result is about: how many, and the first NAMED of them by name. */
typedef struct {
    long long count;
    tc_buf names;
} noted;

typedef struct {
    const char *query;
    size_t query_len;
    size_t query_lines; /* newlines in the query: a hit spans query_lines + 1 lines */
    char *wild;         /* "*query*" in wildcard mode */
    const char *glob;
    int ignore_case;
    long long max;
    long long hits;
    long long files;
    noted partial;      /* larger than FILE_CAP: only their first FILE_CAP bytes searched */
    noted hard_linked;  /* hits dropped (see search_file) */
    noted unreadable;   /* files and directories that could not be read, with the reason */
    tc_buf *out;
    tc_buf data, lower;
} search;

static void note(noted *n, const char *path) {
    if (n->count++ >= NAMED) return;
    if (n->names.len) tc_buf_puts(&n->names, ", ");
    tc_buf_put_name(&n->names, path, strlen(path));
}

/* Note `path` as unreadable for the reason errno value `err` gives. */
static void note_unreadable(noted *n, int err, const char *path) {
    if (n->count++ >= NAMED) return;
    tc_buf reason = {0};
    tc_fail_errno(&reason, err, TC_READING, "", path);
    if (n->names.len) tc_buf_puts(&n->names, ", ");
    tc_buf_puts(&n->names, reason.data + 2); /* past the empty "what: " */
    tc_buf_free(&reason);
}

static void report(tc_buf *out, const noted *n, const char *what) {
    if (!n->count) return;
    tc_buf_printf(out, "[%lld %s: %s%s]\n", n->count, what, n->names.data,
                  n->count > NAMED ? ", ..." : "");
}

static void lower_ascii(char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] >= 'A' && s[i] <= 'Z') s[i] = (char)(s[i] + 32);
}

static void emit(search *s, const char *path, long long line, const char *text, size_t n) {
    if (n > LINE_CAP) n = LINE_CAP;
    tc_buf_put_name(s->out, path, strlen(path));
    tc_buf_printf(s->out, ":%lld:", line);
    tc_buf_put(s->out, text, n);
    tc_buf_putc(s->out, '\n');
    s->hits++;
}

static long long count_lines(const char *p, const char *end) {
    long long n = 0;
    for (; p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++) n++;
    return n;
}

/*
 * One window of a file: text[0, len) is in memory, hits that start in text[0, upto) are
 * this window's (the rest of the window is carried over to the next one). *line is the line
 * number of text[0] and moves to that of text[upto]; *skip says that text[0] continues a
 * line that already had a hit, so the window starts after its end.
 */
static void scan(search *s, const char *path, const char *text, size_t len, size_t upto,
                 long long *line, int *skip) {
    const char *end = text + len, *stop_at = text + upto, *p = text;
    if (*skip) {
        const char *nl = memchr(text, '\n', upto);
        if (!nl) return;
        p = nl + 1;
        (*line)++;
        *skip = 0;
    }
    const char *hay = text;
    if (s->ignore_case) {
        s->lower.len = 0;
        tc_buf_put(&s->lower, text, len);
        lower_ascii(s->lower.data, len);
        hay = s->lower.data;
    }
    const char *counted = p; /* newlines before here are in *line */
    while (p < stop_at && s->hits < s->max) {
        const char *at, *start;
        if (s->wild) {
            /* A line longer than the window is matched piece by piece. */
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            const char *lend = nl ? nl : end;
            size_t n = (size_t)(lend - p);
            char *copy = malloc(n + 1);
            memcpy(copy, hay + (p - text), n);
            copy[n] = '\0';
            int match = fnmatch(s->wild, copy, 0) == 0;
            free(copy);
            if (!match) {
                p = lend + 1;
                continue;
            }
            at = start = p;
        } else {
            const char *hit = memmem(hay + (p - text), (size_t)(end - p), s->query, s->query_len);
            if (!hit || text + (hit - hay) >= stop_at) break;
            at = text + (hit - hay);
            start = at;
            while (start > text && start[-1] != '\n') start--;
        }
        *line += count_lines(counted, at);
        const char *nl = memchr(at, '\n', (size_t)(end - at));
        const char *stop = nl ? nl : end;
        emit(s, path, *line, start, (size_t)(stop - start));
        counted = at;
        if (!nl || stop >= stop_at) {
            /* The line goes on past this window's part: the next window skips its rest. */
            *skip = stop >= stop_at;
            break;
        }
        p = stop + (s->wild != NULL);
    }
    if (counted < stop_at) *line += count_lines(counted, stop_at);
}

/* How much of the window text[0, len) is this window's: up to the start of its last
 * query_lines + 1 lines (which a hit starting before them cannot reach past), or, when
 * those would be more than half the window (a very long line), all but the last
 * query_len - 1 bytes (at most half the window). */
static size_t window_end(const search *s, const char *text, size_t len) {
    size_t newlines = 0;
    for (size_t i = len; i > len / 2; i--) {
        if (text[i - 1] == '\n' && ++newlines > s->query_lines) return i;
    }
    size_t keep = s->query_len - 1 < len / 2 ? s->query_len - 1 : len / 2;
    return len - keep;
}

/* Search the open file fd, WINDOW bytes at a time. */
static void search_file(search *s, int fd, const char *path) {
    size_t out_len = s->out->len;
    long long hits = s->hits, line = 1;
    unsigned long long total = 0;
    size_t carry = 0;
    int skip = 0;
    s->files++;
    for (;;) {
        size_t room = WINDOW - carry;
        ssize_t n = read(fd, s->data.data + carry, room);
        if (n < 0) {
            note_unreadable(&s->unreadable, errno, path);
            return;
        }
        size_t len = carry + (size_t)n;
        /* A short read of a regular file is its end: saves the second, empty read. */
        int eof = (size_t)n < room;
        if (total == 0 && memchr(s->data.data, '\0', len < 8192 ? len : 8192)) return; /* binary */
        total += (unsigned long long)n;
        size_t upto = eof ? len : window_end(s, s->data.data, len);
        scan(s, path, s->data.data, len, upto, &line, &skip);
        if (eof || s->hits >= s->max) break;
        if (total >= FILE_CAP) {
            note(&s->partial, path);
            break;
        }
        carry = len - upto;
        memmove(s->data.data, s->data.data + upto, carry);
    }
    if (s->hits == hits) return;
    /* A hard-linked file may be the same file as one outside the mounts (the path policy
     * refuses one named directly), so its hits are dropped. Checked only for files with
     * hits: a stat of every file would cost a host trip per file. */
    __wasi_filestat_t st;
    if (__wasi_fd_filestat_get((__wasi_fd_t)fd, &st) != 0 || st.nlink > 1) {
        s->out->len = out_len;
        s->hits = hits;
        note(&s->hard_linked, path);
    }
}

/* path_open without wasi-libc's openat, which first asks fd_fdstat_get for the directory's
 * rights: one host trip less per file. Symbolic links are not followed. The descriptor, or
 * minus the errno value. */
static int open_entry(int dirfd, const char *name, int dir) {
    const __wasi_rights_t rights = __WASI_RIGHTS_FD_READ | __WASI_RIGHTS_FD_READDIR |
                                   __WASI_RIGHTS_PATH_OPEN | __WASI_RIGHTS_FD_FILESTAT_GET;
    __wasi_fd_t fd;
    __wasi_errno_t err = __wasi_path_open((__wasi_fd_t)dirfd, 0, name,
                                          dir ? __WASI_OFLAGS_DIRECTORY : 0, rights,
                                          dir ? rights : 0, 0, &fd);
    return err ? -(int)err : (int)fd;
}

static void walk(search *s, int dirfd, tc_buf *path) {
    uint8_t *buf = malloc(DIRBUF);
    if (!buf) abort();
    __wasi_dircookie_t cookie = 0;
    size_t base = path->len;
    for (;;) {
        __wasi_size_t used = 0;
        __wasi_errno_t err;
        /* The host reads each listed entry's metadata: one removed meanwhile (another
         * call's temporary file) fails the batch with ENOENT, and a second read succeeds. */
        int attempts = 64;
        do err = __wasi_fd_readdir(dirfd, buf, DIRBUF, cookie, &used);
        while (err == __WASI_ERRNO_NOENT && --attempts > 0);
        if (err) {
            note_unreadable(&s->unreadable, err, path->data ? path->data : "");
            break;
        }
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
                    if (fd < 0) {
                        note_unreadable(&s->unreadable, -fd, path->data);
                    } else {
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
    for (size_t i = 0; i < qlen; i++) s.query_lines += query[i] == '\n';
    s.data.data = malloc(WINDOW + 1);
    if (!s.data.data) abort();
    s.data.cap = WINDOW + 1;
    if (mode && strcmp(mode, "wildcard") == 0) {
        s.wild = malloc(qlen + 3);
        s.wild[0] = '*';
        memcpy(s.wild + 1, query, qlen);
        s.wild[qlen + 1] = '*';
        s.wild[qlen + 2] = '\0';
    } else if (mode && strcmp(mode, "literal") != 0) {
        char *bad = tc_name(mode);
        error = tc_fail(out, TC_VALIDATION, "mode must be literal or wildcard, not %s", bad);
        free(bad);
        goto done;
    }
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        error = tc_fail_errno(out, errno, TC_READING, "cannot search", path);
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
    if (s.hits == 0) {
        char *shown = tc_name(path);
        tc_buf_printf(out, "no matches in %lld files under %s\n", s.files, shown);
        free(shown);
    } else if (s.hits >= s.max) {
        tc_buf_printf(out, "[stopped at max_results=%lld]\n", s.max);
    }
    report(out, &s.hard_linked, "hard-linked files were skipped");
    report(out, &s.unreadable, "files or directories could not be read");
    char what[96];
    snprintf(what, sizeof what, "files are larger than %llu MiB; only their first %llu MiB "
             "were searched", FILE_CAP >> 20, FILE_CAP >> 20);
    report(out, &s.partial, what);
done:
    tc_buf_free(&s.data);
    tc_buf_free(&s.lower);
    tc_buf_free(&s.partial.names);
    tc_buf_free(&s.hard_linked.names);
    tc_buf_free(&s.unreadable.names);
    tc_buf_free(&where);
    free(s.wild);
    free(path);
    free(query);
    free(glob);
    free(mode);
    return error;
}

int main(void) { return tc_tool_main(run); }
