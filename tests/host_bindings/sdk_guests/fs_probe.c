/* Calls the fs binding directly, past every tool's own checks: {"op", "path", "name"}.
 *   read        the file `path` (tc_read_file)
 *   read_many   the file `name` of directory `path`, through one read_many record
 *   opendir_at  the entry `name` of directory `path`; says "opened"
 *   list        the names in directory `path`, one a line
 *   stat        the type and size of `path`
 * A failure is the SDK's message for its errno ("probe: PATH does not exist", ...). */
#include <stdlib.h>
#include <string.h>

#include "toolcage.h"
#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    char *op = tc_arg_str(args, "op", NULL);
    char *path = tc_arg_str(args, "path", NULL);
    char *name = tc_arg_str(args, "name", NULL);
    const char *error = NULL;
    tc_buf data = {0};
    int err = 0;
    if (!op || !path) {
        error = tc_fail(out, TC_VALIDATION, "op and path are required");
    } else if (strcmp(op, "read") == 0) {
        err = tc_read_file(path, 1 << 20, &data, NULL);
        if (!err) tc_buf_put(out, data.data, data.len);
    } else if (strcmp(op, "stat") == 0) {
        tch_fs_info info;
        int32_t rc = toolcage_fs_stat(path, (int32_t)strlen(path), &info);
        if (rc < 0) err = tch_fs_errno(rc);
        else tc_buf_printf(out, "type %d size %llu", info.type, (unsigned long long)info.size);
    } else {
        int32_t dir = toolcage_fs_opendir(path, (int32_t)strlen(path));
        const char *entry = name ? name : "";
        if (dir < 0) {
            err = tch_fs_errno(dir);
        } else if (strcmp(op, "list") == 0) {
            err = tch_fs_list(dir, 0, &data);
            for (size_t off = 0; !err && off + TCH_FS_ENTRY_SIZE <= data.len;) {
                uint16_t n;
                memcpy(&n, data.data + off + 8, sizeof n);
                tc_buf_put(out, data.data + off + TCH_FS_ENTRY_SIZE, n);
                tc_buf_putc(out, '\n');
                off += TCH_FS_ENTRY_SIZE + n;
            }
        } else if (strcmp(op, "opendir_at") == 0) {
            int32_t sub = toolcage_fs_opendir_at(dir, entry, (int32_t)strlen(entry));
            if (sub < 0) err = tch_fs_errno(sub);
            else tc_buf_puts(out, "opened");
        } else if (strcmp(op, "read_many") == 0) {
            tc_buf names = {0};
            tc_buf_put(&names, entry, strlen(entry) + 1);
            char *buf = malloc(1 << 16);
            int32_t used = toolcage_fs_read_many(dir, names.data, (int32_t)names.len, 1 << 12,
                                                 buf, 1 << 16);
            tch_fs_record rec;
            if (used < 0) {
                err = tch_fs_errno(used);
            } else if ((size_t)used < sizeof rec) {
                error = tc_fail(out, TC_EXECUTION, "no record");
            } else {
                memcpy(&rec, buf, sizeof rec);
                err = (int)rec.err;
                if (!err) tc_buf_put(out, buf + sizeof rec, rec.len);
            }
            free(buf);
            tc_buf_free(&names);
        } else {
            error = tc_fail(out, TC_VALIDATION, "unknown op");
        }
    }
    if (err) error = tc_fail_errno(out, err, TC_READING, "probe", name ? name : path);
    tc_buf_free(&data);
    free(op);
    free(path);
    free(name);
    return error;
}

int main(void) { return tc_tool_main(run); }
