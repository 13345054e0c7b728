/*
 * toolcage guest SDK: arguments in, a JSON result or a typed error out, and file helpers.
 * Host capabilities (HTTP, clock, progress) are in toolcage_host.h.
 *
 * A tool is a WASI command. Its main is `return tc_tool_main(run);`:
 * the validated JSON arguments arrive on stdin, `run` fills the result text or returns an
 * error_type (the host's closed vocabulary: "validation_error", "permission_denied",
 * "execution_error", ...) with the message in `out`, and the JSON result goes to stdout.
 *
 * Paths the host hands in have already passed the path policy and are canonical guest
 * paths (such as /workspace/notes.txt); the second wall is the host's fs binding, which
 * opens them beneath the granted mounts only, or WASI's preopens for tools that write.
 */
#ifndef TOOLCAGE_H
#define TOOLCAGE_H

#include <stddef.h>
#include <stdint.h>

/* A growable byte buffer (always NUL-terminated once written to). */
typedef struct {
    char *data;
    size_t len, cap;
} tc_buf;
void tc_buf_put(tc_buf *b, const char *s, size_t n);
void tc_buf_puts(tc_buf *b, const char *s);
void tc_buf_putc(tc_buf *b, char c);
/* "quoted, escaped": control characters escaped, and each byte that is not part of valid
 * UTF-8 written as U+FFFD, so the JSON is always valid UTF-8. */
void tc_buf_json_string(tc_buf *b, const char *s, size_t n);
const char *tc_buf_cstr(tc_buf *b);                           /* NUL-terminated view */
void tc_buf_free(tc_buf *b);
/* Room for `room` more bytes and a NUL after b->len: 0, or ENOMEM. */
int tc_buf_reserve(tc_buf *b, size_t room);

/* Reading JSON: pointers into the text, no allocation unless said. */
const char *tc_json_ws(const char *p);                      /* skip whitespace */
const char *tc_json_skip(const char *p);                    /* past one value, NULL if bad */
const char *tc_json_get(const char *obj, const char *key);  /* member value or NULL */
char *tc_json_str(const char *value, size_t *len);          /* malloc'd decoded string or NULL */
int tc_json_num(const char *value, double *out);            /* 1 if a number */
int tc_json_bool(const char *value, int *out);              /* 1 if true/false */

/*
 * Tool entry: reads the arguments (a JSON object) from argv[1], or from stdin when there is
 * no argv[1], calls `run`, and produces {"ok":true,"text":...} or
 * {"ok":false,"error_type":...,"message":...}: on stdout when the arguments came from stdin,
 * else left in linear memory for the host, which finds it through the exported
 * `toolcage_reply` function -- a success whose text is valid UTF-8 as "t", the length of the
 * document without its text (u32, little endian), that document and the text unescaped;
 * anything else as "j" and the document.
 * `run` fills `out` and returns NULL, or returns an error_type and puts the message in `out`.
 */
typedef const char *(*tc_tool_fn)(const char *args, tc_buf *out);
int tc_tool_main(tc_tool_fn run);

#define TC_VALIDATION "validation_error"
#define TC_PERMISSION "permission_denied"
#define TC_EXECUTION "execution_error"

/*
 * Results for two audiences. Beside its text, a successful result may carry, in its result
 * document:
 *   "details"   a JSON object of facts a caller decides on ({"path", "bytes", "lines"});
 *               the model gets it beside the text;
 *   "display"   one line for a person ("Read notes.txt (42 lines)"); never sent to a model;
 *   "artifacts" [{"kind", "ref", "action"}]: what the call created, changed, deleted or sent.
 * `run` sets them with the calls below, in any order; a failed call drops them. Strings are
 * written as valid UTF-8 (see tc_buf_json_string); names go through tc_buf_put_name first
 * (tc_detail_name), as they do in the text.
 */
void tc_detail_str(const char *key, const char *value);
void tc_detail_strn(const char *key, const char *value, size_t n);
void tc_detail_name(const char *key, const char *name); /* a path or name, shown escaped */
void tc_detail_int(const char *key, long long value);
void tc_detail_bool(const char *key, int value);
/* One JSON value copied as it is, such as what tc_json_get found in a host's answer or an
 * array built with tc_buf_json_string; nothing is added when it is not one JSON value. */
void tc_detail_json(const char *key, const char *value);
/* All the details at once, a JSON object (members added later go into it); nothing is set
 * when it is not one. */
void tc_result_details(const char *object);
/* The argument a failure is about: the error envelope's "field" (tch_result_error sets it
 * from a host's answer that names one). */
void tc_error_field(const char *field);
/* The display line, printf-style. It is sent as one line of visible text: a C0 control or
 * DEL in it becomes a space, and a C1 control (U+0080-U+009F), U+2028, U+2029 or a format
 * character (Unicode category Cf: bidirectional controls, zero-width characters, the byte
 * order mark, ...) is shown as \uHHHH (\UHHHHHHHH past U+FFFF), the host's rule for every
 * tool's display line. */
void tc_result_display(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The display line itself, to build with tc_buf_puts, tc_buf_int, ...: a printf costs a
 * fresh instance more than a small tool's whole answer, so a tool called often builds it
 * this way. */
tc_buf *tc_display(void);
/* An artifact: `kind` "file" (a path: file, directory or link), "memory", "schedule",
 * "media" or the tool's own; `ref` the path (shown escaped: pass it raw) or id; `action`
 * one of the TC_* below. */
void tc_result_artifact(const char *kind, const char *ref, const char *action);
#define TC_CREATED "created"
#define TC_MODIFIED "modified"
#define TC_DELETED "deleted"
#define TC_SENT "sent"

/* The `key` members of the objects in JSON array `array`, as a JSON array of at most `max`
 * values (nulls left out) in `into`, how many in *kept (when not NULL); returns the array's
 * length (-1 when it is not one). */
long long tc_json_pluck(const char *array, const char *key, size_t max, tc_buf *into,
                        size_t *kept);

/* A byte count for a person: "512 B", "1.2 KB", "3.4 MB", "2.0 GB" (powers of 1024). */
void tc_buf_size(tc_buf *b, unsigned long long bytes);
/* The last component of a path (the path itself when it has no '/'). */
const char *tc_base_name(const char *path);

/* Arguments. A missing member gives the default; a present member of the wrong type
 * is reported through `*bad` (set to the member's name) when bad is not NULL. */
char *tc_arg_str(const char *args, const char *key, size_t *len);          /* malloc'd or NULL */
long long tc_arg_int(const char *args, const char *key, long long dflt);
int tc_arg_bool(const char *args, const char *key, int dflt);

/* Error helpers: put a message in `out` and return the error_type to return from run. */
const char *tc_fail(tc_buf *out, const char *error_type, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* What a failed file operation was doing, for the wording of its message. */
typedef enum { TC_READING, TC_WRITING } tc_access;
/* The error_type and message for a failed file operation, from errno: "<what>: <path> ...",
 * worded for reading or for writing (a refused read is not "not writable"), with `path`
 * shown through tc_buf_put_name. */
const char *tc_fail_errno(tc_buf *out, int err, tc_access access, const char *what,
                          const char *path);

/* A whole number in decimal, without printf. */
void tc_buf_int(tc_buf *b, long long value);

/* printf into a buffer. */
void tc_buf_printf(tc_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The note where output was cut, in the host's one wording (toolcage.policies
 * truncation_marker): "[output truncated — original size: 1,234 bytes]", or "... size:
 * unknown]" when `original_size` is negative. No surrounding newlines. */
void tc_buf_truncation_marker(tc_buf *b, long long original_size);

/*
 * Names in output. Every path or file name a tool prints goes through these, so that a
 * name cannot forge lines or reach a terminal as a control sequence. The one form:
 *   \\       a backslash;
 *   \xHH     one byte: a C0 control (0x00-0x1F, including tab, newline and carriage
 *            return), DEL (0x7F), or a byte that is not part of valid UTF-8;
 *   \uHHHH   one character: a C1 control (U+0080-U+009F), U+2028, U+2029, or a
 *            bidirectional formatting character (U+061C, U+200E, U+200F, U+202A-U+202E,
 *            U+2066-U+2069).
 * Every other byte is copied. A backslash in the output always starts one of these.
 */
void tc_buf_put_name(tc_buf *b, const char *s, size_t n);
char *tc_name(const char *s); /* malloc'd shown form of a NUL-terminated name */

/* Whole-file reads. tc_read_file reads a regular file through the host's fs binding (the
 * tool declares "fs" in its needs): one host call for a file under 64 KiB. tc_read_fd reads
 * an open WASI descriptor with as few WASI calls as possible: for a file under 64 KiB, one
 * read. Return 0 or an errno value; EFBIG when the file exceeds `cap` bytes, with its size
 * in *size_out. (tc_read_file is defined beside the fs import, in toolcage_host.c.) */
int tc_read_file(const char *path, size_t cap, tc_buf *into, long long *size_out);
int tc_read_fd(int fd, size_t cap, tc_buf *into, long long *size_out);

/* Open the file a tool is about to replace, to read its current content: not through a
 * symbolic link (ELOOP), only a regular file (EISDIR for a directory, ENXIO for anything
 * else) and only one with a single link (EMLINK: a hard-linked file may be the same file as
 * one outside the mounts). *fd is left open for the end of the call to reclaim. */
int tc_open_replaced(const char *path, int *fd);

/*
 * Replacing a file atomically. A tool never writes into the file it changes: it writes the
 * whole new content into a temporary file and the host renames that over the target after
 * the tool reported success (and removes it on any failure). The host names the temporary
 * file in the arguments document (`_temp`, unpredictable). With `_temp_made` the host made
 * it, empty, in the target's directory, and tc_temp_create opens it there (ESTALE when
 * that directory was swapped for another meanwhile, EEXIST when the name holds anything but
 * an empty regular file with one link); with `_temp_error` (an errno's name) the host could
 * not, and tc_temp_create returns that errno; with neither, it makes the file in the
 * target's directory, exclusively.
 *   tc_temp t;
 *   if ((err = tc_temp_create(&t, args, path)) || (err = tc_temp_write(&t, data, n)) ||
 *       (err = tc_temp_finish(&t))) return tc_fail_errno(out, err, TC_WRITING, ...);
 * Each returns 0 or an errno value (ENOTSUP when the arguments name no temporary file).
 */
typedef struct {
    int fd;
} tc_temp;
int tc_temp_create(tc_temp *t, const char *args, const char *target);
int tc_temp_write(tc_temp *t, const char *data, size_t len);
int tc_temp_copy(tc_temp *t, int from); /* the rest of descriptor `from` */
int tc_temp_finish(tc_temp *t);         /* sync its data to disk and close it */

/* 1 when the bytes look binary (a NUL byte in the first 8 KiB, or not UTF-8). */
int tc_is_binary(const char *data, size_t len);
/* 1 when data is valid UTF-8. */
int tc_is_utf8(const char *data, size_t len);

/* Join a directory and an entry name with one '/'. */
void tc_path_join(tc_buf *into, const char *dir, const char *name);

#endif
