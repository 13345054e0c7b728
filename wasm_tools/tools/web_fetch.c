/*
 * web_fetch: fetch a page and turn it into Markdown or plain text, inside the guest.
 *
 * The body arrives as the server's bytes. Its charset comes from a byte order mark, the
 * Content-Type header or, for HTML, a <meta> near the start (web_fetch/charset.c); UTF-8,
 * UTF-16 and windows-1252 (which every ISO-8859-1 label means on the web) are decoded, any
 * other charset is read as UTF-8 with a note saying so. HTML goes through lexbor, a WHATWG
 * HTML5 parser (web_fetch/page.c), and the DOM becomes Markdown (web_fetch/markdown.c, with
 * web_fetch/elements.c saying what each element is and web_fetch/url.c resolving links);
 * other text types pass through; binary types are refused.
 *
 * Besides "text", the result document carries "details" (final URL, status, title,
 * charset, bytes) and "display" ("Fetched <title> (N KB)").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolcage_host.h"
#include "web_fetch/charset.h"
#include "web_fetch/markdown.h"
#include "web_fetch/page.h"

/* Bytes the parsed document may hold: the rest of a page past it is cut. With the page
 * itself (its bytes, and their UTF-8 when it came in another charset), the allocator's
 * slack and the result, this fits the default guest limit of 64 MiB for a response at the
 * default cap of 5 MiB. */
#define PARSE_BUDGET ((size_t)24 << 20)
/* Linear memory the parse may grow the guest to: the rest is left to the conversion and
 * the result. A guest given less memory is stopped at its limit when the page needs it. */
#define PARSE_MEMORY ((size_t)44 << 20)
/* Memory held back while the page is parsed, for the conversion and the result: a guest
 * given less than the default limit fills it with the document, and still finishes. */
#define CONVERSION_RESERVE ((size_t)6 << 20)
/* Bytes of converted text kept; the host cuts what it shows far below this. */
#define MAX_OUTPUT ((size_t)2 << 20)

static int has_prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The host's rule for text: text types, JSON, XML, JavaScript; no type and valid UTF-8. */
static int is_text(const char *mime, const char *body, size_t n) {
    if (!mime || !*mime) return tc_is_utf8(body, n) && !memchr(body, 0, n < 8192 ? n : 8192);
    return has_prefix(mime, "text/") || has_prefix(mime, "application/json") ||
           has_prefix(mime, "application/xml") || has_prefix(mime, "application/xhtml+xml") ||
           ends_with(mime, "+json") || ends_with(mime, "+xml") || ends_with(mime, "javascript") ||
           ends_with(mime, "ecmascript") || ends_with(mime, "x-www-form-urlencoded");
}

typedef struct {
    tc_buf title;
    const char *charset;
    int undecoded; /* the page's charset is not one decoded here */
} page_facts;

/* Convert the page in `utf8` to `out`; notes for what was cut go to `notes`. `utf8` and
 * `reserve` are freed once the page is parsed: the document holds what it needs. */
static void convert_html(tc_buf *utf8, void *reserve, int markdown, const char *base,
                         tc_buf *out, tc_buf *notes, page_facts *facts) {
    int cut = 0;
    lxb_html_document_t *doc =
        wf_parse(tc_buf_cstr(utf8), utf8->len, PARSE_BUDGET, PARSE_MEMORY, &cut);
    free(reserve);
    tc_buf_free(utf8);
    if (!doc) {
        tc_buf_puts(notes, "\n\n[the page could not be parsed within the memory limit]");
        return;
    }
    wf_title(doc, &facts->title);
    tc_buf base_url = {0};
    wf_base_url(doc, base, &base_url);
    wf_options options = {.markdown = markdown, .base = base_url.data, .max_output = MAX_OUTPUT};
    wf_report report = {0};
    lxb_dom_node_t *root = wf_content_root(doc, &options.in_article);
    wf_markdown(root, &options, out, &report);
    lxb_html_document_destroy(doc);
    tc_buf_free(&base_url);
    if (cut == WF_CUT_MEMORY)
        tc_buf_puts(notes, "\n\n[the page was cut here: the rest of its markup needs more "
                           "memory than the conversion may use]");
    if (cut == WF_CUT_DEPTH)
        tc_buf_printf(notes, "\n\n[the page was cut here: its elements nest more than %d deep]",
                      WF_MAX_OPEN);
    if (report.output_cut)
        tc_buf_printf(notes, "\n\n[the conversion stopped at %zu MiB of text]",
                      MAX_OUTPUT >> 20);
    if (report.flattened && cut != WF_CUT_DEPTH)
        tc_buf_puts(notes, "\n\n[elements nested too deep were read as plain text]");
}

/* The result's details and display line (see toolcage.h): what a caller decides on. */
static void put_details(const char *final, double status, const page_facts *facts, double bytes,
                        int truncated) {
    tc_detail_str("url", final ? final : "");
    tc_detail_int("status", (long long)status);
    if (facts->title.len) tc_detail_strn("title", facts->title.data, facts->title.len);
    else tc_detail_json("title", "null");
    tc_detail_str("charset", facts->charset);
    tc_detail_int("bytes", (long long)bytes);
    tc_detail_bool("truncated", truncated);
    tc_buf *shown = tc_display();
    tc_buf_puts(shown, "Fetched ");
    if (facts->title.len) tc_buf_put(shown, facts->title.data, facts->title.len);
    else tc_buf_puts(shown, final ? final : "the page");
    tc_buf_printf(shown, " (%.0f KB)", bytes / 1024 < 1 && bytes > 0 ? 1 : bytes / 1024);
}

static const char *too_big(tc_buf *out, double size) {
    if (size >= 0) tc_buf_printf(out, "the page (%.0f bytes)", size);
    else tc_buf_puts(out, "the page");
    tc_buf_puts(out, " does not fit in this tool's memory; a larger [tools.web_fetch] "
                     "memory_bytes would hold it");
    return "execution_error";
}

static const char *run(const char *args, tc_buf *out) {
    size_t ulen = 0;
    char *url = tc_json_str(tc_json_get(args, "url"), &ulen);
    if (!url || !ulen) {
        free(url);
        tc_buf_puts(out, "url must be a non-empty string");
        return "validation_error";
    }
    char *format = tc_json_str(tc_json_get(args, "format"), NULL);
    int markdown = !format || strcmp(format, "markdown") == 0;
    if (format && !markdown && strcmp(format, "text") != 0) {
        free(url);
        free(format);
        tc_buf_puts(out, "format must be \"markdown\" or \"text\"");
        return "validation_error";
    }
    free(format);
    tc_buf req = {0};
    tc_buf_puts(&req, "{\"method\":\"GET\",\"raw\":true,\"url\":");
    tc_buf_json_string(&req, url, ulen);
    tc_buf_puts(&req, ",\"headers\":{\"accept\":"
                      "\"text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5\"}}");
    tc_buf note = {0};
    tc_buf_puts(&note, "fetching ");
    tc_buf_put(&note, url, ulen);
    tch_progress(tc_buf_cstr(&note), 0.0);
    tc_buf_free(&note);
    int32_t code;
    char *result = tch_http(req.data, req.len, &code);
    tc_buf_free(&req);
    free(url);
    if (!result && code == TCH_EINTERNAL) /* the result's buffer could not be allocated */
        return too_big(out, -1);
    if (!result)
        return tc_fail(out, TC_EXECUTION, "the http host call failed (ABI error %d)", code);
    const char *error_type = NULL;
    int ok = 0, truncated = 0;
    double status = 0, size = -1;
    char *ctype = NULL, *encoding = NULL, *final = NULL, *header = NULL;
    tc_buf raw = {0}, utf8 = {0}, notes = {0};
    page_facts facts = {{0}, "utf-8", 0};
    if (!tc_json_bool(tc_json_get(result, "ok"), &ok) || !ok) {
        error_type = tch_result_error(result, out);
        goto done;
    }
    tc_json_num(tc_json_get(result, "status"), &status);
    tc_json_bool(tc_json_get(result, "truncated"), &truncated);
    if (!tc_json_num(tc_json_get(result, "size"), &size)) size = -1;
    ctype = tc_json_str(tc_json_get(result, "content_type"), NULL);
    encoding = tc_json_str(tc_json_get(result, "body_encoding"), NULL);
    final = tc_json_str(tc_json_get(result, "url"), NULL);
    const char *headers = tc_json_get(result, "headers");
    header = headers ? tc_json_str(tc_json_get(headers, "content-type"), NULL) : NULL;
    if (status >= 400) {
        tc_buf_printf(out, "HTTP %d from %s", (int)status, final ? final : "the server");
        error_type = "execution_error";
        goto done;
    }
    {
        /* base64 needs no JSON unescaping: decoded in place, to the start of the result,
         * which becomes the page's bytes; the parse then starts with as little memory
         * taken as can be. */
        char *value = (char *)tc_json_get(result, "body");
        char *end = value && *value == '"' ? strchr(value + 1, '"') : NULL;
        int base64 = encoding && strcmp(encoding, "base64") == 0;
        size_t len = (size_t)-1;
        if (base64 && end && !memchr(value + 1, '\\', (size_t)(end - value - 1))) {
            len = wf_base64_decode(value + 1, (size_t)(end - value - 1));
            if (len != (size_t)-1) memmove(result, value + 1, len);
        } else {
            char *body = tc_json_str(value, &len);
            if (body && base64) len = wf_base64_decode(body, len);
            if (body && len != (size_t)-1) memcpy(result, body, len); /* never longer */
            if (!body) len = (size_t)-1;
            free(body);
        }
        if (len == (size_t)-1) {
            tc_buf_puts(out, "the HTTP result's body is not valid base64");
            error_type = "execution_error";
            goto done;
        }
        result[len] = '\0';
        raw = (tc_buf){result, len, len + 1};
        result = NULL;
    }
    tc_buf_cstr(&raw);
    int html = ctype && (has_prefix(ctype, "text/html") || has_prefix(ctype, "application/xhtml"));
    if (!html && (!ctype || !*ctype)) {
        const char *first = tc_json_ws(raw.data);
        html = first && *first == '<';
    }
    if (!html && !is_text(ctype, raw.data, raw.len)) {
        tc_buf_printf(out, "cannot show binary content (%s) as text; use http_request to see "
                      "raw bytes", ctype && *ctype ? ctype : "unknown type");
        error_type = "execution_error";
        goto done;
    }
    wf_sniffed sniffed = wf_sniff(raw.data, raw.len, header, html);
    facts.charset = sniffed.label;
    facts.undecoded = sniffed.charset == WF_OTHER;
    wf_charset charset = sniffed.charset == WF_OTHER ? WF_UTF8 : sniffed.charset;
    if (charset == WF_UTF8 && tc_is_utf8(raw.data + sniffed.skip, raw.len - sniffed.skip)) {
        /* already the parser's encoding: no copy */
        memmove(raw.data, raw.data + sniffed.skip, raw.len - sniffed.skip + 1);
        raw.len -= sniffed.skip;
        utf8 = raw;
        raw = (tc_buf){0};
    } else if (!wf_to_utf8(charset, raw.data + sniffed.skip, raw.len - sniffed.skip, &utf8)) {
        error_type = too_big(out, size);
        goto done;
    }
    tc_buf_free(&raw);
    if (facts.undecoded)
        tc_buf_printf(&notes, "[the page's charset (%s) was not decoded: it was read as UTF-8, "
                      "so characters outside ASCII may show as \xEF\xBF\xBD]\n\n", sniffed.label);
    tc_buf_put(out, notes.data, notes.len);
    notes.len = 0;
    if (html) {
        void *reserve = malloc(CONVERSION_RESERVE);
        if (!reserve) {
            error_type = too_big(out, size);
            goto done;
        }
        tch_progress("converting HTML", 0.5);
        tc_buf converted = {0};
        convert_html(&utf8, reserve, markdown, final, &converted, &notes, &facts);
        if (facts.title.len) {
            tc_buf_puts(out, markdown ? "Title: " : "");
            tc_buf_put(out, facts.title.data, facts.title.len);
            tc_buf_puts(out, "\n\n");
        }
        tc_buf_put(out, tc_buf_cstr(&converted), converted.len);
        tc_buf_free(&converted);
        size_t blank = out->len ? 0 : 2; /* nothing above the notes: no blank line */
        if (notes.len > blank) tc_buf_put(out, notes.data + blank, notes.len - blank);
    } else {
        tc_buf_put(out, utf8.data, utf8.len);
    }
    if (truncated) {
        tc_buf_puts(out, "\n\n");
        tc_buf_truncation_marker(out, size >= 0 ? (long long)size : -1);
    }
    put_details(final, status, &facts, size >= 0 ? size : 0, truncated);
done:
    tc_buf_free(&raw);
    tc_buf_free(&utf8);
    tc_buf_free(&notes);
    tc_buf_free(&facts.title);
    free(ctype);
    free(encoding);
    free(final);
    free(header);
    free(result);
    return error_type;
}

int main(void) { return tc_tool_main(run); }
