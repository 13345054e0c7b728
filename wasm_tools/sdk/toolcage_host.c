/* Guest-side helpers for the toolcage host ABI v1; see toolcage_host.h. */
#include "toolcage_host.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef int32_t (*tch_fetch)(char *, int32_t);

static char *take(int32_t n, tch_fetch fetch, int32_t *code) {
    if (n < 0) {
        *code = n;
        return NULL;
    }
    char *out = malloc((size_t)n + 1);
    if (!out) {
        *code = TCH_EINTERNAL;
        return NULL;
    }
    int32_t got = fetch(out, n);
    if (got < 0) {
        free(out);
        *code = got;
        return NULL;
    }
    out[got] = '\0';
    *code = 0;
    return out;
}

char *tch_http(const char *req, size_t len, int32_t *code) {
    return take(toolcage_http_request(req, (int32_t)len), toolcage_http_result, code);
}

char *tch_clock(const char *req, size_t len, int32_t *code) {
    return take(toolcage_clock_now(req, (int32_t)len), toolcage_clock_result, code);
}

char *tch_search(const char *req, size_t len, int32_t *code) {
    return take(toolcage_search_query(req, (int32_t)len), toolcage_search_result, code);
}

const char *tch_relay(tch_request_fn request, tch_result_fn result, const char *capability,
                      const char *args, tc_buf *out) {
    return tch_answer(request(args, (int32_t)strlen(args)), result, capability, out);
}

const char *tch_answer(int32_t n, tch_result_fn result, const char *capability, tc_buf *out) {
    return tch_answer_keep(n, result, capability, out, NULL);
}

const char *tch_answer_keep(int32_t n, tch_result_fn result, const char *capability, tc_buf *out,
                            char **kept) {
    int32_t code;
    char *answer = take(n, result, &code);
    if (kept) *kept = answer;
    if (!answer) {
        tc_buf_printf(out, "the %s host call failed (ABI error %d)",
                      capability, (int)code);
        return TC_EXECUTION;
    }
    int ok = 0;
    const char *error_type = NULL;
    if (!tc_json_bool(tc_json_get(answer, "ok"), &ok) || !ok) {
        error_type = tch_result_error(answer, out);
    } else {
        size_t len = 0;
        char *text = tc_json_str(tc_json_get(answer, "text"), &len);
        if (text) tc_buf_put(out, text, len);
        free(text);
    }
    if (!kept) free(answer);
    return error_type;
}

void tch_present(const char *answer) {
    tc_result_details(tc_json_get(answer, "details"));
    char *display = tc_json_str(tc_json_get(answer, "display"), NULL);
    if (display) {
        tc_buf *line = tc_display();
        line->len = 0;
        tc_buf_puts(line, display);
    }
    free(display);
    const char *p = tc_json_ws(tc_json_get(answer, "artifacts"));
    if (!p || *p != '[') return;
    for (p = tc_json_ws(p + 1); p && *p == '{'; p = tc_json_ws(p + 1)) {
        char *kind = tc_json_str(tc_json_get(p, "kind"), NULL);
        char *ref = tc_json_str(tc_json_get(p, "ref"), NULL);
        char *action = tc_json_str(tc_json_get(p, "action"), NULL);
        if (kind && ref && action) tc_result_artifact(kind, ref, action);
        free(kind);
        free(ref);
        free(action);
        p = tc_json_ws(tc_json_skip(p));
        if (!p || *p != ',') return;
    }
}

void tch_progress(const char *msg, double fraction) {
    toolcage_progress_report(msg, (int32_t)strlen(msg), fraction);
}

void tch_log(int level, const char *msg) { toolcage_log_write(level, msg, (int32_t)strlen(msg)); }

const char *tch_result_error(const char *result, tc_buf *msg) {
    static const char *known[] = {"permission_denied", "timeout", "validation_error",
                                  "execution_error", "not_found"};
    size_t len = 0;
    char *type = tc_json_str(tc_json_get(result, "error_type"), NULL);
    char *text = tc_json_str(tc_json_get(result, "message"), &len);
    const char *kind = "execution_error";
    for (size_t i = 0; type && i < sizeof known / sizeof *known; i++)
        if (strcmp(type, known[i]) == 0) kind = known[i];
    if (text) tc_buf_put(msg, text, len);
    else tc_buf_puts(msg, "the host returned an unreadable result");
    char *field = tc_json_str(tc_json_get(result, "field"), NULL);
    if (field) tc_error_field(field);
    free(field);
    free(type);
    free(text);
    return kind;
}

int tch_fs_errno(int32_t rc) { return rc <= -1000 ? (int)(-1000 - rc) : EIO; }

int tch_fs_list(int32_t dir, int sizes, tc_buf *into) {
    into->len = 0;
    size_t want = into->cap > 4096 ? into->cap - 1 : 4096;
    for (;;) {
        if (want + 1 > into->cap) {
            char *grown = realloc(into->data, want + 1);
            if (!grown) return ENOMEM;
            into->data = grown;
            into->cap = want + 1;
        }
        int32_t n = toolcage_fs_list(dir, into->data, (int32_t)want, sizes);
        if (n < 0) return tch_fs_errno(n);
        if ((size_t)n <= want) {
            into->len = (size_t)n;
            into->data[n] = '\0';
            return 0;
        }
        want = (size_t)n; /* longer than the buffer: the host keeps it for the next call */
    }
}

int tc_read_file(const char *path, size_t cap, tc_buf *into, long long *size_out) {
    /* Through the fs binding: one host call for a file under 64 KiB, two for a larger one
     * (the second into one exact buffer, sized by the first). Each call reads in one open,
     * so the text is never stitched from two versions of the file. */
    size_t room = 65536;
    for (int attempt = 0; attempt < 8; attempt++) {
        if (tc_buf_reserve(into, room)) return ENOMEM;
        tch_fs_info info;
        int32_t n = toolcage_fs_read(path, (int32_t)strlen(path), 0, into->data + into->len,
                                     (int32_t)room, &info);
        if (n < 0) return tch_fs_errno(n);
        if (size_out) *size_out = (long long)info.size;
        if (info.size > cap || (size_t)n > cap) return EFBIG;
        if (info.complete) {
            into->len += (size_t)n;
            into->data[into->len] = '\0';
            if (size_out) *size_out = (long long)n;
            return 0;
        }
        room = (size_t)info.size + 1; /* one byte more tells a file that grew meanwhile */
    }
    return EAGAIN; /* it kept growing */
}
