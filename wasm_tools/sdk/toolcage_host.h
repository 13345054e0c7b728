/*
 * toolcage host ABI v1, guest side: the imports through which a tool calls host
 * capabilities, and small helpers around them.
 *
 * Each capability is one import module (toolcage_fs_v1, toolcage_http_v1, toolcage_clock_v1,
 * toolcage_search_v1, toolcage_progress_v1, toolcage_log_v1, toolcage_memory_v1,
 * toolcage_scratchpad_v1, toolcage_vault_v1, toolcage_scheduler_v1, toolcage_channel_v1,
 * toolcage_relay_v1).
 * The host links only the capabilities a tool is granted -- a tool declares them in its
 * JSON declaration under "needs" -- so a tool that uses an import it was not granted fails
 * to instantiate.
 * Only imports a tool actually calls end up in its module (the linker drops the rest).
 *
 * Requests and results are UTF-8 JSON. A request call returns the result's length (or a
 * negative TCH_E* code); the result is then copied out with the module's `result` import.
 * The tch_* helpers do both steps and return a malloc'd, NUL-terminated result.
 * Buffers, JSON reading and the tool entry point are the SDK's (toolcage.h).
 * Full description: host_bindings/_abi.py.
 */
#ifndef TOOLCAGE_HOST_H
#define TOOLCAGE_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "toolcage.h"

#define TCH_IMPORT(module, name) __attribute__((import_module(module), import_name(name)))

/* ABI error codes (negative returns). */
#define TCH_EFAULT -1     /* pointer/length outside guest memory */
#define TCH_EINVALID -2   /* request not UTF-8 JSON of the documented shape */
#define TCH_ETOOBIG -3    /* request too large */
#define TCH_ENORESULT -4  /* nothing pending */
#define TCH_ESHORTBUF -5  /* result buffer too small (result stays pending) */
#define TCH_ENOCALL -6    /* called outside a tool call */
#define TCH_EINTERNAL -7  /* host failure */

TCH_IMPORT("toolcage_http_v1", "request") int32_t toolcage_http_request(const char *req, int32_t len);
TCH_IMPORT("toolcage_http_v1", "result") int32_t toolcage_http_result(char *buf, int32_t cap);
TCH_IMPORT("toolcage_clock_v1", "now") int32_t toolcage_clock_now(const char *req, int32_t len);
TCH_IMPORT("toolcage_clock_v1", "result") int32_t toolcage_clock_result(char *buf, int32_t cap);
TCH_IMPORT("toolcage_search_v1", "query") int32_t toolcage_search_query(const char *req, int32_t len);
TCH_IMPORT("toolcage_search_v1", "result") int32_t toolcage_search_result(char *buf, int32_t cap);
/* The state store: the call's user's notes, the call's session's scratchpad, and the vault.
 * Requests are the tool's arguments; results carry the tool's output in "text". */
TCH_IMPORT("toolcage_memory_v1", "save") int32_t toolcage_memory_save(const char *req, int32_t len);
TCH_IMPORT("toolcage_memory_v1", "update") int32_t toolcage_memory_update(const char *req, int32_t len);
TCH_IMPORT("toolcage_memory_v1", "delete") int32_t toolcage_memory_delete(const char *req, int32_t len);
TCH_IMPORT("toolcage_memory_v1", "search") int32_t toolcage_memory_search(const char *req, int32_t len);
TCH_IMPORT("toolcage_memory_v1", "result") int32_t toolcage_memory_result(char *buf, int32_t cap);
TCH_IMPORT("toolcage_scratchpad_v1", "read") int32_t toolcage_scratchpad_read(const char *req, int32_t len);
TCH_IMPORT("toolcage_scratchpad_v1", "write") int32_t toolcage_scratchpad_write(const char *req, int32_t len);
TCH_IMPORT("toolcage_scratchpad_v1", "clear") int32_t toolcage_scratchpad_clear(const char *req, int32_t len);
TCH_IMPORT("toolcage_scratchpad_v1", "result") int32_t toolcage_scratchpad_result(char *buf, int32_t cap);
TCH_IMPORT("toolcage_vault_v1", "copy") int32_t toolcage_vault_copy(const char *req, int32_t len);
TCH_IMPORT("toolcage_vault_v1", "result") int32_t toolcage_vault_result(char *buf, int32_t cap);
/* The scheduler: the call's user's schedules and their runs (requests are the tools'
 * arguments; results carry the tool's output in "text"). */
TCH_IMPORT("toolcage_scheduler_v1", "create") int32_t toolcage_scheduler_create(const char *req, int32_t len);
TCH_IMPORT("toolcage_scheduler_v1", "search") int32_t toolcage_scheduler_search(const char *req, int32_t len);
TCH_IMPORT("toolcage_scheduler_v1", "edit") int32_t toolcage_scheduler_edit(const char *req, int32_t len);
TCH_IMPORT("toolcage_scheduler_v1", "delete") int32_t toolcage_scheduler_delete(const char *req, int32_t len);
TCH_IMPORT("toolcage_scheduler_v1", "runs") int32_t toolcage_scheduler_runs(const char *req, int32_t len);
TCH_IMPORT("toolcage_scheduler_v1", "run_output") int32_t toolcage_scheduler_run_output(const char *req, int32_t len);
TCH_IMPORT("toolcage_scheduler_v1", "result") int32_t toolcage_scheduler_result(char *buf, int32_t cap);
/* The channel: send `data` to the call's channel as an attachment described by the JSON
 * `meta` ({"name", "mime_type"}); the result's "text" says what was sent. */
TCH_IMPORT("toolcage_channel_v1", "send")
int32_t toolcage_channel_send(const char *meta, int32_t meta_len, const char *data, int32_t data_len);
TCH_IMPORT("toolcage_channel_v1", "result") int32_t toolcage_channel_result(char *buf, int32_t cap);
/* The relay: the one host call a relay tool's declaration names ("relay": "memory.save"),
 * of the binding the tool was granted; its answer may carry the tool's details, display
 * line and artifacts besides its "text" (see tch_present). */
TCH_IMPORT("toolcage_relay_v1", "call") int32_t toolcage_relay_call(const char *req, int32_t len);
TCH_IMPORT("toolcage_relay_v1", "result") int32_t toolcage_relay_result(char *buf, int32_t cap);
TCH_IMPORT("toolcage_progress_v1", "report")
int32_t toolcage_progress_report(const char *msg, int32_t len, double fraction);
TCH_IMPORT("toolcage_log_v1", "write") int32_t toolcage_log_write(int32_t level, const char *msg, int32_t len);

/*
 * fs (toolcage_fs_v1): reads under the call's granted mounts, served by the host in the
 * guest's own thread -- no trip through WASI's I/O threads, bytes straight into the
 * buffer given. Paths are canonical guest paths; results are bytes, a handle or 0, or a
 * negative code: tch_fs_errno gives its errno value (EIO for an ABI error). Details:
 * host_bindings/_fs.py.
 */
typedef struct {
    uint64_t size;    /* bytes (the file's size when it was opened) */
    uint32_t nlink;   /* hard links */
    uint8_t type;     /* TCH_FS_* */
    uint8_t complete; /* the read reached the end of the file */
    uint16_t reserved;
} tch_fs_info;
#define TCH_FS_OTHER 0
#define TCH_FS_FILE 1
#define TCH_FS_DIR 2
#define TCH_FS_LINK 3
#define TCH_FS_NO_SIZE UINT64_MAX
/* A record of read_many: then `len` bytes of the file. */
typedef struct {
    uint32_t err; /* 0 or an errno value */
    uint32_t len;
    tch_fs_info info;
} tch_fs_record;
/* An entry of list: then `name_len` bytes of its name (no NUL). */
#define TCH_FS_ENTRY_SIZE 12

TCH_IMPORT("toolcage_fs_v1", "read")
int32_t toolcage_fs_read(const char *path, int32_t len, int64_t offset, char *buf, int32_t cap,
                         tch_fs_info *info);
TCH_IMPORT("toolcage_fs_v1", "stat")
int32_t toolcage_fs_stat(const char *path, int32_t len, tch_fs_info *info);
TCH_IMPORT("toolcage_fs_v1", "opendir") int32_t toolcage_fs_opendir(const char *path, int32_t len);
TCH_IMPORT("toolcage_fs_v1", "opendir_at")
int32_t toolcage_fs_opendir_at(int32_t dir, const char *name, int32_t len);
TCH_IMPORT("toolcage_fs_v1", "list")
int32_t toolcage_fs_list(int32_t dir, char *buf, int32_t cap, int32_t sizes);
TCH_IMPORT("toolcage_fs_v1", "read_many")
int32_t toolcage_fs_read_many(int32_t dir, const char *names, int32_t len, int32_t each, char *buf,
                              int32_t cap);
TCH_IMPORT("toolcage_fs_v1", "close") int32_t toolcage_fs_close(int32_t dir);

/* The errno value of a negative fs result. */
int tch_fs_errno(int32_t rc);
/* The whole listing of directory handle `dir` into `into` (replacing its content), with
 * lstat sizes when `sizes`; 0 or an errno value. */
int tch_fs_list(int32_t dir, int sizes, tc_buf *into);

/* Request + result in one step. NULL on an ABI error, with *code set. */
char *tch_http(const char *req, size_t len, int32_t *code);
char *tch_clock(const char *req, size_t len, int32_t *code);
char *tch_search(const char *req, size_t len, int32_t *code);
/*
 * A tool that is one host request: send the tool's arguments `args` as the request of
 * `request`, fetch the result with `result`, and put its "text" in `out` (the run
 * function's contract of toolcage.h: NULL on success, else the error_type, with the message
 * in `out`). `capability` names the capability in the message of an ABI error.
 */
typedef int32_t (*tch_request_fn)(const char *req, int32_t len);
typedef int32_t (*tch_result_fn)(char *buf, int32_t cap);
const char *tch_relay(tch_request_fn request, tch_result_fn result, const char *capability,
                      const char *args, tc_buf *out);
/* The second half of tch_relay, for a request made some other way: `n` is what the request
 * call returned (a result length or a negative code). */
const char *tch_answer(int32_t n, tch_result_fn result, const char *capability, tc_buf *out);
/* tch_answer, also handing over the host's whole answer (malloc'd, NUL-terminated; NULL on
 * an ABI error) in *answer, for a tool that reads more of it than its "text". */
const char *tch_answer_keep(int32_t n, tch_result_fn result, const char *capability, tc_buf *out,
                            char **answer);

/* A host answer's "details" (an object), "display" (a string) and "artifacts" ([{"kind",
 * "ref", "action"}]) as the tool's own (tc_result_details, tc_display, tc_result_artifact):
 * the display line is made visible and each ref shown escaped, as for any tool. */
void tch_present(const char *answer);

/* Progress (fraction < 0: unknown) and log lines (0 debug .. 3 error). */
void tch_progress(const char *msg, double fraction);
void tch_log(int level, const char *msg);

/* The error_type of a failed host result ("ok": false), with its message put in `msg`;
 * always one of the envelope's error_type strings. */
const char *tch_result_error(const char *result, tc_buf *msg);

#endif
