/*
 * file_search: recursive search for a literal string (or a wildcard pattern) under a path.
 *
 * Built to make few host calls: files are read through the host's fs binding, which serves
 * them in the guest's own thread (WASI would take each file operation to a thread of its
 * I/O pool and back). Per directory: one call lists it (entry types from the directory,
 * no stat per file), and one call per BATCH bytes reads the first window (up to WINDOW
 * bytes) of many of its files at once, straight into the batch buffer; a file larger than
 * its window is read on, WINDOW bytes a call. Memory stays bounded whatever the file
 * sizes; of a file larger than FILE_CAP only the first FILE_CAP bytes are searched, and the
 * result names it. The files of a directory are searched before its subdirectories.
 * Symbolic links are not followed. Paths are shown in the SDK's escaped form
 * (tc_buf_put_name); the text of a hit is the file's own.
 * Details: {path, matches, files (the first MATCHED_NAMED files with a hit), files_matched,
 * files_searched, truncated (stopped at max_results)}.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wasm_simd128.h>

#include "toolcage.h"
#include "toolcage_host.h"

#define WINDOW (1u << 20)           /* bytes of a file in memory at a time */
#define FILE_CAP (256ull << 20)      /* bytes searched per file; the rest of a larger one is not */
#define LINE_CAP 240
#define BATCH (4u << 20)            /* bytes of files read per host call */
#define NAMED 10 /* files named per note; the rest are counted */
#define MATCHED_NAMED 100 /* files with a hit named in the details; the rest are counted */

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
    long long files_matched;
    tc_buf matched;     /* the first MATCHED_NAMED files with a hit, as JSON strings */
    noted partial;      /* larger than FILE_CAP: only their first FILE_CAP bytes searched */
    noted hard_linked;  /* hits dropped (see search_file) */
    noted unreadable;   /* files and directories that could not be read, with the reason */
    tc_buf *out;
    tc_buf data, lower;
    char *batch;        /* BATCH bytes: records of read_many */
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

/* The byte loops below run 16 bytes at a time with wasm SIMD (wasmtime compiles it to the
 * host's vector instructions); only these functions use it. */
#define SIMD __attribute__((target("simd128")))

static SIMD void lower_ascii(char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] >= 'A' && s[i] <= 'Z') s[i] = (char)(s[i] + 32);
}

/* Whether p[0, n) holds a NUL byte. */
static SIMD int has_nul(const char *p, size_t n) {
    size_t i = 0;
    const v128_t zero = wasm_i8x16_splat(0);
    for (; i + 16 <= n; i += 16)
        if (wasm_v128_any_true(wasm_i8x16_eq(wasm_v128_load(p + i), zero))) return 1;
    return memchr(p + i, '\0', n - i) != NULL;
}

/* The first needle[0, k) in hay[0, n), or NULL. Sixteen positions at a time, those whose
 * first and last bytes match are compared in full; when those comparisons cost more than
 * the scan itself (a needle of one repeated byte in a run of it), memmem's linear-time
 * search takes over. */
static SIMD const char *find(const char *hay, size_t n, const char *needle, size_t k) {
    if (k < 2 || n < k) return k == 0 ? hay : memmem(hay, n, needle, k);
    const v128_t first = wasm_i8x16_splat(needle[0]), last = wasm_i8x16_splat(needle[k - 1]);
    size_t i = 0, compared = 0;
    for (; i + k - 1 + 16 <= n; i += 16) {
        v128_t a = wasm_i8x16_eq(wasm_v128_load(hay + i), first);
        v128_t b = wasm_i8x16_eq(wasm_v128_load(hay + i + k - 1), last);
        uint32_t mask = wasm_i8x16_bitmask(wasm_v128_and(a, b));
        while (mask) {
            size_t at = i + (size_t)__builtin_ctz(mask);
            if (memcmp(hay + at + 1, needle + 1, k - 2) == 0) return hay + at;
            compared += k;
            mask &= mask - 1;
        }
        if (compared > i + 4096) return memmem(hay + i + 16, n - i - 16, needle, k);
    }
    return memmem(hay + i, n - i, needle, k);
}

/* Newlines in [p, end). */
static SIMD long long count_lines(const char *p, const char *end) {
    long long n = 0;
    const v128_t nl = wasm_i8x16_splat('\n');
    for (; p + 16 <= end; p += 16)
        n += __builtin_popcount(wasm_i8x16_bitmask(wasm_i8x16_eq(wasm_v128_load(p), nl)));
    for (; p < end; p++) n += *p == '\n';
    return n;
}

static void emit(search *s, const char *path, long long line, const char *text, size_t n) {
    if (n > LINE_CAP) n = LINE_CAP;
    tc_buf_put_name(s->out, path, strlen(path));
    tc_buf_printf(s->out, ":%lld:", line);
    tc_buf_put(s->out, text, n);
    tc_buf_putc(s->out, '\n');
    s->hits++;
}

/*
 * One window of a file: text[0, len) is in memory, hits that start in text[0, upto) are
 * this window's (the rest of the window is carried over to the next one). *line is the line
 * number of text[0] and moves to that of text[upto] (unless `last`: no window follows); *skip
 * says that text[0] continues a line that already had a hit, so the window starts after its end.
 */
static void scan(search *s, const char *path, const char *text, size_t len, size_t upto,
                 int last, long long *line, int *skip) {
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
            const char *hit = find(hay + (p - text), (size_t)(end - p), s->query, s->query_len);
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
    if (!last && counted < stop_at) *line += count_lines(counted, stop_at);
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

/* Search the file at `path`, whose first window (`len` bytes at `text`, described by
 * `first`) is in memory; the rest is read WINDOW bytes at a time. */
static void search_file(search *s, const char *path, const char *text, size_t len,
                        const tch_fs_info *first) {
    size_t out_len = s->out->len;
    long long hits = s->hits, line = 1;
    unsigned long long total = len;
    uint32_t nlink = first->nlink;
    int skip = 0, eof = first->complete;
    s->files++;
    /* A file whose first 8 KiB hold a NUL byte is binary: no hit of it is shown. The check
     * is a pass of its own, so a file wholly in memory without a hit (most of a search) is
     * done in one pass of find() instead. */
    if (eof && !s->wild && !s->ignore_case && !find(text, len, s->query, s->query_len)) return;
    if (has_nul(text, len < 8192 ? len : 8192)) return;
    for (;;) {
        size_t upto = eof ? len : window_end(s, text, len);
        scan(s, path, text, len, upto, eof, &line, &skip);
        if (eof || s->hits >= s->max) break;
        if (total >= FILE_CAP) {
            note(&s->partial, path);
            break;
        }
        size_t carry = len - upto;
        memmove(s->data.data, text + upto, carry);
        size_t room = WINDOW - carry;
        tch_fs_info info;
        int32_t n = toolcage_fs_read(path, (int32_t)strlen(path), (int64_t)total,
                                     s->data.data + carry, (int32_t)room, &info);
        if (n < 0) {
            note_unreadable(&s->unreadable, tch_fs_errno(n), path);
            return;
        }
        if (info.nlink > nlink) nlink = info.nlink;
        text = s->data.data;
        len = carry + (size_t)n;
        total += (unsigned long long)n;
        eof = info.complete || n == 0;
    }
    if (s->hits == hits) return;
    /* A hard-linked file may be the same file as one outside the mounts (the path policy
     * refuses one named directly), so its hits are dropped. */
    if (nlink > 1) {
        s->out->len = out_len;
        s->hits = hits;
        note(&s->hard_linked, path);
        return;
    }
    if (s->files_matched++ < MATCHED_NAMED) {
        tc_buf shown = {0};
        tc_buf_put_name(&shown, path, strlen(path));
        if (s->matched.len) tc_buf_putc(&s->matched, ',');
        tc_buf_json_string(&s->matched, tc_buf_cstr(&shown), shown.len);
        tc_buf_free(&shown);
    }
}

/* Set `path` to the directory's path (its first `base` bytes), '/' and `name`. */
static void set_entry(tc_buf *path, size_t base, const char *name, size_t n) {
    path->len = base;
    tc_buf_putc(path, '/');
    tc_buf_put(path, name, n);
}

/* Search the files named in `names` (each followed by a NUL) of directory handle `dir`. */
static void search_files(search *s, int32_t dir, tc_buf *path, const tc_buf *names) {
    size_t base = path->len, done = 0;
    while (done < names->len && s->hits < s->max) {
        int32_t used = toolcage_fs_read_many(dir, names->data + done, (int32_t)(names->len - done),
                                             WINDOW, s->batch, BATCH);
        if (used < 0) {
            path->len = base;
            note_unreadable(&s->unreadable, tch_fs_errno(used), tc_buf_cstr(path));
            return;
        }
        size_t off = 0;
        while (off + sizeof(tch_fs_record) <= (size_t)used && done < names->len) {
            tch_fs_record rec;
            memcpy(&rec, s->batch + off, sizeof rec);
            const char *name = names->data + done;
            size_t n = strlen(name);
            done += n + 1;
            set_entry(path, base, name, n);
            if (rec.err) note_unreadable(&s->unreadable, (int)rec.err, path->data);
            else if (s->hits < s->max)
                search_file(s, path->data, s->batch + off + sizeof rec, rec.len, &rec.info);
            off += sizeof rec + rec.len;
        }
        if (used == 0) break; /* no progress: cannot happen with BATCH >= a record */
    }
    path->len = base;
    path->data[base] = '\0';
}

static void walk(search *s, int32_t dir, tc_buf *path) {
    tc_buf list = {0}, files = {0}, dirs = {0};
    size_t base = path->len;
    int err = tch_fs_list(dir, 0, &list);
    if (err) {
        note_unreadable(&s->unreadable, err, tc_buf_cstr(path));
        goto done;
    }
    /* The regular files that pass the glob, and the subdirectories, each name + NUL. */
    for (size_t off = 0; off + TCH_FS_ENTRY_SIZE <= list.len;) {
        uint16_t n;
        memcpy(&n, list.data + off + 8, sizeof n);
        uint8_t type = (uint8_t)list.data[off + 10];
        char *name = list.data + off + TCH_FS_ENTRY_SIZE;
        off += TCH_FS_ENTRY_SIZE + n;
        if (off > list.len) break;
        char saved = name[n];
        name[n] = '\0';
        if (type == TCH_FS_DIR) tc_buf_put(&dirs, name, (size_t)n + 1);
        else if (type == TCH_FS_FILE && (!s->glob || fnmatch(s->glob, name, 0) == 0))
            tc_buf_put(&files, name, (size_t)n + 1);
        name[n] = saved;
    }
    if (files.len) search_files(s, dir, path, &files);
    for (size_t off = 0; off < dirs.len && s->hits < s->max;) {
        const char *name = dirs.data + off;
        size_t n = strlen(name);
        off += n + 1;
        set_entry(path, base, name, n);
        int32_t sub = toolcage_fs_opendir_at(dir, name, (int32_t)n);
        if (sub < 0) {
            note_unreadable(&s->unreadable, tch_fs_errno(sub), path->data);
            continue;
        }
        walk(s, sub, path);
        toolcage_fs_close(sub);
    }
done:
    path->len = base;
    if (path->data) path->data[base] = '\0';
    tc_buf_free(&list);
    tc_buf_free(&files);
    tc_buf_free(&dirs);
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
    s.batch = malloc(BATCH);
    if (!s.batch) abort();
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
    int32_t dir = toolcage_fs_opendir(path, (int32_t)strlen(path));
    if (dir >= 0) {
        size_t n = strlen(path);
        while (n > 1 && path[n - 1] == '/') n--;
        tc_buf_put(&where, path, n);
        walk(&s, dir, &where);
        toolcage_fs_close(dir);
    } else if (tch_fs_errno(dir) == ENOTDIR) {
        tch_fs_info info;
        int32_t n = toolcage_fs_read(path, (int32_t)strlen(path), 0, s.data.data, WINDOW, &info);
        if (n < 0) {
            error = tc_fail_errno(out, tch_fs_errno(n), TC_READING, "cannot search", path);
            goto done;
        }
        search_file(&s, path, s.data.data, (size_t)n, &info);
    } else {
        error = tc_fail_errno(out, tch_fs_errno(dir), TC_READING, "cannot search", path);
        goto done;
    }
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
    char *shown = tc_name(path);
    tc_detail_str("path", shown);
    free(shown);
    tc_detail_int("matches", s.hits);
    tc_buf files = {0};
    tc_buf_putc(&files, '[');
    tc_buf_put(&files, s.matched.data ? s.matched.data : "", s.matched.len);
    tc_buf_putc(&files, ']');
    tc_detail_json("files", files.data);
    tc_buf_free(&files);
    tc_detail_int("files_matched", s.files_matched);
    tc_detail_int("files_searched", s.files);
    tc_detail_bool("truncated", s.hits >= s.max);
    if (s.hits)
        tc_result_display("Found %lld match%s in %lld file%s%s", s.hits, s.hits == 1 ? "" : "es",
                          s.files_matched, s.files_matched == 1 ? "" : "s",
                          s.hits >= s.max ? " (stopped at max_results)" : "");
    else
        tc_result_display("No matches in %lld file%s", s.files, s.files == 1 ? "" : "s");
done:
    tc_buf_free(&s.matched);
    tc_buf_free(&s.data);
    tc_buf_free(&s.lower);
    tc_buf_free(&s.partial.names);
    tc_buf_free(&s.hard_linked.names);
    tc_buf_free(&s.unreadable.names);
    tc_buf_free(&where);
    free(s.batch);
    free(s.wild);
    free(path);
    free(query);
    free(glob);
    free(mode);
    return error;
}

int main(void) { return tc_tool_main(run); }
