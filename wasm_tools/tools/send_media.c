/* send_media: send a file to the user's channel as an attachment.
 * The file is read through the fs binding (only under the granted mounts), its media type
 * is sniffed from its first bytes, never from its name, and the bytes go to the host's
 * channel binding (toolcage_channel_v1.send), which enforces the operator's size cap.
 * Details: {path, sent (the name), mime_type, bytes, channel_id}. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "toolcage_host.h"

#define READ_CAP (16u << 20) /* bytes; the host's cap ([channel] max_media_bytes) is lower */

static int starts(const char *data, size_t len, const char *magic, size_t n) {
    return len >= n && memcmp(data, magic, n) == 0;
}

/* The start of the text after a UTF-8 byte order mark and whitespace. */
static const char *text_start(const char *data, size_t len) {
    const char *p = data, *end = data + len;
    if (starts(p, len, "\xEF\xBB\xBF", 3)) p += 3;
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    return p;
}

static const char *sniff(const char *data, size_t len) {
    if (starts(data, len, "\x89PNG\r\n\x1A\n", 8)) return "image/png";
    if (starts(data, len, "\xFF\xD8\xFF", 3)) return "image/jpeg";
    if (starts(data, len, "GIF87a", 6) || starts(data, len, "GIF89a", 6)) return "image/gif";
    if (len >= 12 && starts(data, len, "RIFF", 4) && memcmp(data + 8, "WEBP", 4) == 0)
        return "image/webp";
    if (starts(data, len, "%PDF-", 5)) return "application/pdf";
    if (tc_is_binary(data, len)) return "application/octet-stream";
    const char *p = text_start(data, len);
    size_t rest = len - (size_t)(p - data);
    size_t head = rest < 4096 ? rest : 4096;
    if (starts(p, rest, "<svg", 4)) return "image/svg+xml";
    if (starts(p, rest, "<?xml", 5))
        return memmem(p, head, "<svg", 4) ? "image/svg+xml" : "application/xml";
    return "text/plain";
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static const char *run(const char *args, tc_buf *out) {
    char *path = tc_arg_str(args, "path", NULL);
    const char *error = NULL;
    tc_buf data = {0}, meta = {0};
    if (!path) {
        error = tc_fail(out, TC_VALIDATION, "path is required");
        goto done;
    }
    long long size = 0;
    int err = tc_read_file(path, READ_CAP, &data, &size);
    if (err == EFBIG) {
        char *shown = tc_name(path);
        error = tc_fail(out, TC_VALIDATION, "%s is too large to send (%lld bytes)", shown, size);
        free(shown);
        goto done;
    }
    if (err) {
        error = tc_fail_errno(out, err, TC_READING, "cannot read", path);
        goto done;
    }
    const char *name = base_name(path);
    tc_buf_puts(&meta, "{\"name\":");
    tc_buf_json_string(&meta, name, strlen(name));
    tc_buf_puts(&meta, ",\"mime_type\":\"");
    tc_buf_puts(&meta, sniff(data.data ? data.data : "", data.len));
    tc_buf_puts(&meta, "\"}");
    int32_t n = toolcage_channel_send(tc_buf_cstr(&meta), (int32_t)meta.len,
                                      data.data ? data.data : "", (int32_t)data.len);
    error = tch_answer(n, toolcage_channel_result, "channel", out);
    if (!error) {
        const char *answer = tc_buf_cstr(out);
        char *shown = tc_name(path), *shown_name = tc_name(name);
        tc_detail_str("path", shown);
        static const char *const facts[] = {"sent", "mime_type", "bytes", "channel_id"};
        for (size_t i = 0; i < sizeof facts / sizeof *facts; i++)
            tc_detail_json(facts[i], tc_json_get(answer, facts[i]));
        tc_result_artifact("media", name, TC_SENT);
        tc_buf amount = {0};
        tc_buf_size(&amount, data.len);
        const char *type = sniff(data.data ? data.data : "", data.len);
        tc_result_display("Sent %s (%s, %s)", shown_name, type, tc_buf_cstr(&amount));
        tc_buf_free(&amount);
        free(shown);
        free(shown_name);
    }
done:
    tc_buf_free(&data);
    tc_buf_free(&meta);
    free(path);
    return error;
}

int main(void) { return tc_tool_main(run); }
