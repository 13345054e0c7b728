/*
 * web_fetch's DOM to Markdown (or plain text): headings, paragraphs, emphasis, links and
 * images (made absolute against the page's URL), nested lists, block quotes, code blocks
 * with their language, GFM pipe tables; scripts, styles, forms, navigation, footers and
 * other boilerplate dropped; whitespace collapsed as a browser does.
 */
#ifndef WEB_FETCH_MARKDOWN_H
#define WEB_FETCH_MARKDOWN_H

#include <stddef.h>

#include <lexbor/dom/interfaces/character_data.h>
#include <lexbor/html/html.h>

#include "toolcage.h"

typedef struct {
    int markdown;      /* 1: Markdown; 0: plain text */
    int in_article;    /* the root is a main or an article: its header and aside are content */
    const char *base;  /* the page's final URL, for relative links (may be NULL) */
    size_t max_output; /* bytes of output at which the conversion stops */
} wf_options;

typedef struct {
    int output_cut; /* the output reached max_output */
    int flattened;  /* elements nested too deep were read as plain text */
} wf_report;

/* Write the content under `root` to `out`, trimmed, with blank lines squeezed. */
void wf_markdown(lxb_dom_node_t *root, const wf_options *options, tc_buf *out,
                 wf_report *report);

#endif
