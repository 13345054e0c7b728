/*
 * file_list: the entries of a directory (type, size, path), optionally recursively.
 * Directories are listed through the host's fs binding: one host call per directory, with
 * every entry's type and size (lstat: links are shown, not followed).
 * Names are shown in the SDK's escaped form (tc_buf_put_name), one entry per line.
 * Details: {path, entries, files, dirs, links, truncated, unlisted}.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "toolcage.h"
#include "toolcage_host.h"

#define MAX_ENTRIES 5000

typedef struct {
    tc_buf *out;
    size_t count;
    size_t files, dirs, links;
    int truncated;
    size_t unlisted; /* subdirectories that could not be listed, named in `why` */
    tc_buf why;
} listing;

typedef struct {
    const char *name; /* NUL-terminated, inside the listing */
    uint64_t size;
    uint8_t type;
} entry;

static int by_name(const void *a, const void *b) {
    return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

/* The entries of the listing in `raw` (names NUL-terminated in place), or NULL. */
static entry *parse(tc_buf *raw, size_t *count) {
    size_t n = 0, cap = 0;
    entry *entries = NULL;
    for (size_t off = 0; off + TCH_FS_ENTRY_SIZE <= raw->len;) {
        entry e;
        uint16_t len;
        memcpy(&e.size, raw->data + off, sizeof e.size);
        memcpy(&len, raw->data + off + 8, sizeof len);
        e.type = (uint8_t)raw->data[off + 10];
        /* The name's first byte takes the place of the next entry's: shift it left over
         * the header's padding byte so it can end with a NUL. */
        char *name = raw->data + off + TCH_FS_ENTRY_SIZE;
        off += TCH_FS_ENTRY_SIZE + len;
        if (off > raw->len) break;
        memmove(name - 1, name, len);
        name[len - 1] = '\0';
        e.name = name - 1;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            entry *grown = realloc(entries, cap * sizeof *entries);
            if (!grown) abort();
            entries = grown;
        }
        entries[n++] = e;
    }
    *count = n;
    return entries;
}

static void note_unlisted(listing *l, int err, const char *rel) {
    if (l->unlisted++ >= 10) return;
    tc_buf reason = {0};
    tc_fail_errno(&reason, err, TC_READING, "", rel);
    if (l->why.len) tc_buf_puts(&l->why, ", ");
    tc_buf_puts(&l->why, reason.data + 2); /* past the empty "what: " */
    tc_buf_free(&reason);
}

/* List directory handle `dir` with names relative to the listing root `rel`. */
static int list_dir(listing *l, int32_t dir, const char *rel, int depth) {
    tc_buf raw = {0};
    int err = tch_fs_list(dir, 1, &raw);
    if (err) {
        tc_buf_free(&raw);
        return err;
    }
    size_t n = 0;
    entry *entries = parse(&raw, &n);
    qsort(entries, n, sizeof *entries, by_name);
    tc_buf sub = {0};
    for (size_t i = 0; i < n; i++) {
        if (l->count >= MAX_ENTRIES) {
            l->truncated = 1;
            break;
        }
        const entry *e = &entries[i];
        sub.len = 0;
        if (*rel) {
            tc_buf_puts(&sub, rel);
            tc_buf_putc(&sub, '/');
        }
        tc_buf_puts(&sub, e->name);
        const char *type = e->type == TCH_FS_DIR    ? "dir"
                           : e->type == TCH_FS_FILE ? "file"
                           : e->type == TCH_FS_LINK ? "link"
                                                    : "other";
        if (e->type == TCH_FS_FILE) tc_buf_printf(l->out, "%s\t%llu\t", type, (unsigned long long)e->size);
        else tc_buf_printf(l->out, "%s\t-\t", type);
        tc_buf_put_name(l->out, sub.data, sub.len);
        tc_buf_puts(l->out, e->type == TCH_FS_DIR ? "/\n" : "\n");
        l->count++;
        l->files += e->type == TCH_FS_FILE;
        l->dirs += e->type == TCH_FS_DIR;
        l->links += e->type == TCH_FS_LINK;
        if (depth > 1 && e->type == TCH_FS_DIR) {
            int32_t child = toolcage_fs_opendir_at(dir, e->name, (int32_t)strlen(e->name));
            int sub_err = child < 0 ? tch_fs_errno(child) : list_dir(l, child, sub.data, depth - 1);
            if (child >= 0) toolcage_fs_close(child);
            if (sub_err) note_unlisted(l, sub_err, sub.data);
        }
    }
    free(entries);
    tc_buf_free(&raw);
    tc_buf_free(&sub);
    return 0;
}

/* The details and the display line of a listing of `shown`. */
static void describe(const listing *l, const char *shown) {
    tc_detail_str("path", shown);
    tc_detail_int("entries", (long long)l->count);
    tc_detail_int("files", (long long)l->files);
    tc_detail_int("dirs", (long long)l->dirs);
    tc_detail_int("links", (long long)l->links);
    tc_detail_bool("truncated", l->truncated);
    tc_detail_int("unlisted", (long long)l->unlisted);
    tc_result_display("Listed %s (%zu entr%s: %zu file%s, %zu dir%s%s)", tc_base_name(shown),
                      l->count, l->count == 1 ? "y" : "ies", l->files, l->files == 1 ? "" : "s",
                      l->dirs, l->dirs == 1 ? "" : "s", l->truncated ? ", stopped" : "");
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
    tch_fs_info info;
    int32_t rc = toolcage_fs_stat(path, (int32_t)strlen(path), &info);
    if (rc < 0) {
        error = tc_fail_errno(out, tch_fs_errno(rc), TC_READING, "cannot list", path);
        goto done;
    }
    if (info.type != TCH_FS_DIR) {
        tc_buf_printf(out, "file\t%llu\t%s\n", (unsigned long long)info.size, shown);
        listing one = {out, 1, 1, 0, 0, 0, 0, {0}};
        describe(&one, shown);
        goto done;
    }
    listing l = {out, 0, 0, 0, 0, 0, 0, {0}};
    int32_t dir = toolcage_fs_opendir(path, (int32_t)strlen(path));
    int err = dir < 0 ? tch_fs_errno(dir) : list_dir(&l, dir, "", (int)depth);
    if (dir >= 0) toolcage_fs_close(dir);
    if (err) {
        tc_buf_free(&l.why);
        error = tc_fail_errno(out, err, TC_READING, "cannot list", path);
        goto done;
    }
    if (l.count == 0) tc_buf_printf(out, "(%s is empty)\n", shown);
    if (l.truncated) tc_buf_printf(out, "[listing stopped at %d entries]\n", MAX_ENTRIES);
    if (l.unlisted)
        tc_buf_printf(out, "[%zu directories could not be listed: %s%s]\n", l.unlisted, l.why.data,
                      l.unlisted > 10 ? ", ..." : "");
    describe(&l, shown);
    tc_buf_free(&l.why);
done:
    free(shown);
    free(path);
    return error;
}

int main(void) { return tc_tool_main(run); }
