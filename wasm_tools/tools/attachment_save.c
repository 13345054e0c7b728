/*
 * attachment_save: save an attachment of the current turn under /shared or /tmp.
 *
 * The bytes go into the temporary file the host named (see tc_temp_create); the host
 * renames it over the destination once this tool reported success (without replacing an
 * existing file unless overwrite=true).
 * Details: {path, attachment, bytes, created}.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "toolcage.h"

static int b64(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

static void b64_decode(tc_buf *out, const char *s, size_t n) {
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64((unsigned char)s[i]);
        if (v < 0) continue; /* padding */
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            tc_buf_putc(out, (char)((acc >> bits) & 0xFF));
        }
    }
}

static int under(const char *path, const char *root) {
    size_t n = strlen(root);
    return strncmp(path, root, n) == 0 && path[n] == '/' && path[n + 1];
}

static const char *run(const char *args, tc_buf *out) {
    char *name = tc_arg_str(args, "attachment", NULL);
    char *path = tc_arg_str(args, "path", NULL);
    int overwrite = tc_arg_bool(args, "overwrite", 0);
    const char *error = NULL;
    char *shown = NULL, *shown_name = NULL;
    tc_buf data = {0}, names = {0};
    if (!name || !path) {
        error = tc_fail(out, TC_VALIDATION, "attachment and path are required");
        goto done;
    }
    shown = tc_name(path);
    shown_name = tc_name(name);
    if (!under(path, "/shared") && !under(path, "/tmp")) {
        error = tc_fail(out, TC_PERMISSION,
                        "attachments can only be saved under /shared or /tmp, not %s", shown);
        goto done;
    }
    const char *list = tc_json_ws(tc_json_get(args, "_attachments"));
    int found = 0;
    if (list && *list == '[') {
        const char *p = tc_json_ws(list + 1);
        while (p && *p == '{') {
            char *item = tc_arg_str(p, "name", NULL);
            if (item) {
                if (names.len) tc_buf_puts(&names, ", ");
                tc_buf_put_name(&names, item, strlen(item));
            }
            if (!found && item && strcmp(item, name) == 0) {
                size_t len = 0;
                char *encoded = tc_arg_str(p, "data", &len);
                if (encoded) b64_decode(&data, encoded, len);
                free(encoded);
                found = 1;
            }
            free(item);
            p = tc_json_ws(tc_json_skip(p));
            if (p && *p == ',') p = tc_json_ws(p + 1);
        }
    }
    if (!found) {
        error = tc_fail(out, TC_EXECUTION, "no attachment named %s in this turn (attachments: %s)",
                        shown_name, names.len ? names.data : "none");
        goto done;
    }
    struct stat st;
    int existed = lstat(path, &st) == 0;
    if (!overwrite && existed) {
        error = tc_fail(out, TC_EXECUTION, "%s already exists (pass overwrite=true to replace it)",
                        shown);
        goto done;
    }
    tc_temp t;
    int err = tc_temp_create(&t, args, path);
    if (!err) err = tc_temp_write(&t, data.data ? data.data : "", data.len);
    if (!err) err = tc_temp_finish(&t);
    if (err) {
        error = tc_fail_errno(out, err, TC_WRITING, "cannot save the attachment to", path);
        if (err != ENOENT) tc_buf_puts(out, "; the file was left as it was");
    } else {
        tc_buf_printf(out, "saved attachment %s (%zu bytes) to %s", shown_name, data.len, shown);
        tc_detail_str("path", shown);
        tc_detail_str("attachment", shown_name);
        tc_detail_int("bytes", (long long)data.len);
        tc_detail_bool("created", !existed);
        tc_result_artifact("file", path, existed ? TC_MODIFIED : TC_CREATED);
        tc_buf amount = {0};
        tc_buf_size(&amount, data.len);
        tc_result_display("Saved %s to %s (%s)", shown_name, shown, tc_buf_cstr(&amount));
        tc_buf_free(&amount);
    }
done:
    tc_buf_free(&data);
    tc_buf_free(&names);
    free(shown);
    free(shown_name);
    free(name);
    free(path);
    return error;
}

int main(void) { return tc_tool_main(run); }
