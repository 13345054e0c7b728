/*
 * DOM to Markdown (see markdown.h).
 *
 * The walk is iterative (first_child/next/parent), so a tree 100,000 elements deep costs
 * no stack. Each element up to MAX_FRAMES deep gets a frame that says what its end must
 * write; deeper elements are read as plain text. Line breaks are owed, not written
 * (`pending`), and paid before the next content with the line prefix of the enclosing
 * block quotes and list items, so empty elements leave no blank lines behind.
 *
 * Some elements need their content before they can write anything -- a heading or a
 * table cell is one line, a link with no text is dropped, a code span's fence depends on
 * the backticks inside, a code block's on its lines: these capture their content into a
 * buffer of their own (at most MAX_CAPTURES at once; deeper ones are read as plain text).
 */
#include "markdown.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elements.h"
#include "url.h"

#define MAX_FRAMES 256
#define MAX_CAPTURES 24
#define MAX_COLUMNS 64
#define MAX_URL 4096
#define MAX_ALT 1024
#define MAX_PREFIX 24 /* deeper lists and quotes are not indented further */

enum kind {
    K_NONE,      /* nothing to do at the end */
    K_BLOCK,     /* owe a line break (n) at the end */
    K_HEADING,   /* capture: "#" * level + the text */
    K_EMPHASIS,  /* capture: the text between `mark`s */
    K_CODE,      /* capture: a code span */
    K_PRE,       /* capture: a fenced code block */
    K_LINK,      /* capture: [text](href) */
    K_LIST,      /* ul/ol: numbering for its items */
    K_ITEM,      /* li: a marker, then an indented block */
    K_QUOTE,     /* blockquote: "> " before each line */
    K_TABLE,     /* collects cells, written at the end */
    K_LAYOUT,    /* a table that lays out the page: its cells are blocks */
    K_ROW,       /* tr */
    K_CELL,      /* capture: one cell */
    K_ARTICLE,   /* main/article: header and aside are content below it */
};

typedef struct {
    tc_buf text;     /* the cells' text, each ended by '\0' */
    size_t *cells;   /* cells per row */
    size_t rows, cap;
} table;

typedef struct {
    lxb_dom_node_t *node;
    enum kind kind;
    int breaks;        /* K_BLOCK: line breaks owed at the end */
    size_t prefix_len; /* the prefix to restore at the end */
    int number;        /* K_LIST: the next item's number, 0 for bullets */
    int level;         /* K_HEADING: 1-6; K_EMPHASIS: its bit in md.marks */
    const char *mark;  /* K_EMPHASIS */
    table *table;      /* K_TABLE */
    tc_buf href;       /* K_LINK; K_PRE: the language */
} frame;

typedef struct {
    tc_buf buf;
    tc_buf *out;
    int pending, space, line_start, flat, pre; /* the state outside, restored at the end */
    int lead;                                  /* a space was owed before the first content */
} capture;

typedef struct {
    const wf_options *opt;
    tc_buf *out;        /* the document, or the innermost capture */
    int pending;        /* line breaks owed: 0, 1 or 2 (a blank line) */
    int space;          /* a collapsed space is owed */
    int line_start;     /* the next content begins a line: prefix first */
    int flat;           /* inside a one-line capture: breaks are spaces */
    int pre;            /* inside a code block: text as it is */
    tc_buf prefix;      /* "> " per quote, indentation per list item */
    const char *marker; /* a list marker owed in the prefix, at marker_at */
    size_t marker_at;
    char marker_text[16];
    frame frames[MAX_FRAMES];
    int depth;          /* elements entered; frames[0..min(depth, MAX_FRAMES)) */
    capture captures[MAX_CAPTURES];
    int ncaptures;
    int articles;       /* main/article elements entered */
    int list_depth;     /* lists entered */
    int table_cells;    /* table cells entered */
    int marks;          /* emphasis open: 1 strong, 2 emphasis, 4 struck out */
    size_t written;     /* bytes written, captured ones counted again when they are used */
    wf_report *report;
} md;

/* ---- output ---- */

/* Write s[0..n), or as much of it as max_output leaves room for (whole characters). */
static void w(md *c, const char *s, size_t n) {
    if (!n || c->report->output_cut) return;
    if (n > c->opt->max_output - c->written) {
        n = c->opt->max_output - c->written;
        while (n && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
        c->report->output_cut = 1;
    }
    tc_buf_put(c->out, s, n);
    c->written += n;
}

static void ws(md *c, const char *s) { w(c, s, strlen(s)); }

static void owe(md *c, int breaks) {
    if (breaks > c->pending) c->pending = breaks;
}

/* The prefix of a new line, with a pending list marker in its place. */
static void write_prefix(md *c, int trim) {
    size_t len = c->prefix.len;
    if (c->marker && !trim) {
        w(c, c->prefix.data, c->marker_at);
        ws(c, c->marker);
        size_t after = c->marker_at + strlen(c->marker);
        if (len > after) w(c, c->prefix.data + after, len - after);
        c->marker = NULL;
        return;
    }
    if (trim)
        while (len && c->prefix.data[len - 1] == ' ') len--;
    w(c, c->prefix.data, len);
}

/* Pay owed line breaks (with the current prefix on a blank line). */
static void flush_breaks(md *c) {
    if (!c->pending) return;
    if (c->flat) {
        c->space = 1;
    } else if (!c->line_start && c->out->len) {
        ws(c, "\n");
        if (c->pending > 1) {
            write_prefix(c, 1);
            ws(c, "\n");
        }
        c->line_start = 1;
    }
    c->pending = 0;
}

/* Get ready to write content: owed breaks, the line's prefix or an owed space. */
static void begin(md *c) {
    flush_breaks(c);
    if (c->line_start && !c->flat) {
        write_prefix(c, 0);
        c->line_start = 0;
        c->space = 0;
    } else if (c->space) {
        if (c->out->len && c->out->data[c->out->len - 1] != ' ') ws(c, " ");
        else if (!c->out->len && c->ncaptures) c->captures[c->ncaptures - 1].lead = 1;
        c->space = 0;
    }
}

static void push_prefix(md *c, const char *s) {
    flush_breaks(c);
    if (c->prefix.len + strlen(s) <= MAX_PREFIX) tc_buf_puts(&c->prefix, s);
}

/* ---- captures ---- */

static int capture_begin(md *c, int flat, int pre) {
    if (c->ncaptures >= MAX_CAPTURES) return 0;
    capture *k = &c->captures[c->ncaptures++];
    *k = (capture){{0}, c->out, c->pending, c->space, c->line_start, c->flat, c->pre, 0};
    c->out = &k->buf;
    c->pending = 0;
    c->space = 0;
    c->line_start = 0;
    c->flat = flat || c->flat;
    c->pre = pre || c->pre;
    return 1;
}

/* End the innermost capture; its text (malloc'd, owned by the caller) in *text, and
 * whether a space was owed before its first content and after its last. */
static size_t capture_end(md *c, char **text, int *lead, int *trail) {
    capture *k = &c->captures[--c->ncaptures];
    *lead = k->lead;
    *trail = c->space;
    c->out = k->out;
    c->pending = k->pending;
    c->space = k->space;
    c->line_start = k->line_start;
    c->flat = k->flat;
    c->pre = k->pre;
    tc_buf_cstr(&k->buf);
    *text = k->buf.data;
    return k->buf.len;
}

/* Trim s[0..*n) of spaces; returns the start; lead and trail say whether any were cut. */
static const char *trim(const char *s, size_t *n, int *lead, int *trail) {
    size_t a = 0, b = *n;
    while (a < b && s[a] == ' ') a++;
    while (b > a && s[b - 1] == ' ') b--;
    if (lead) *lead = a > 0;
    if (trail) *trail = b < *n;
    *n = b - a;
    return s + a;
}

/* ---- text ---- */

static int is_space(char ch) {
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f';
}

/* Control characters (C0 but tab and line breaks, DEL, C1) say nothing on a page and
 * could drive a terminal: they are dropped. 0 when s[i] starts none, else its length. */
static size_t control(const char *s, size_t i, size_t n) {
    unsigned char ch = (unsigned char)s[i];
    if ((ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r' && ch != '\f') || ch == 0x7F)
        return 1;
    if (ch == 0xC2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 &&
        (unsigned char)s[i + 1] < 0xA0)
        return 2;
    return 0;
}

static void text(md *c, const char *s, size_t n) {
    if (c->pre) {
        for (size_t i = 0, start = 0;; ) {
            size_t skip = i < n ? control(s, i, n) : 0;
            if (i == n || skip) {
                w(c, s + start, i - start);
                if (i == n) break;
                i += skip;
                start = i;
            } else {
                i++;
            }
        }
        return;
    }
    for (size_t i = 0; i < n;) {
        if (is_space(s[i])) {
            c->space = 1;
            while (i < n && is_space(s[i])) i++;
            continue;
        }
        size_t j = i;
        while (j < n && !is_space(s[j])) j++;
        begin(c);
        /* A no-break space is a space that does not collapse. */
        for (size_t k = i; k < j;) {
            size_t m = k, skip = 0;
            int nbsp = 0;
            while (m < j) {
                nbsp = (unsigned char)s[m] == 0xC2 && m + 1 < j && (unsigned char)s[m + 1] == 0xA0;
                if (nbsp || (skip = control(s, m, j))) break;
                m++;
            }
            w(c, s + k, m - k);
            if (nbsp) ws(c, " ");
            k = m < j ? m + (nbsp ? 2 : skip) : m;
        }
        i = j;
    }
}

/* s[0..n) on one line: breaks and tabs as spaces, runs of spaces as one. */
static void flatten(tc_buf *into, const char *s, size_t n, int escape_pipes) {
    int space = 0, started = 0;
    for (size_t i = 0; i < n; i++) {
        if (is_space(s[i])) {
            space = 1;
            continue;
        }
        if (space && started) tc_buf_putc(into, ' ');
        started = 1;
        space = 0;
        if (escape_pipes && s[i] == '|' && !(i && s[i - 1] == '\\')) tc_buf_putc(into, '\\');
        tc_buf_putc(into, s[i]);
    }
}

/* ---- elements ---- */

static void image(md *c, lxb_dom_node_t *node) {
    size_t alen, slen;
    const char *alt = wf_attr(node, "alt", &alen);
    const char *src = wf_attr(node, "src", &slen);
    tc_buf shown = {0};
    if (alt) flatten(&shown, alt, alen > MAX_ALT ? MAX_ALT : alen, 0);
    int linkable = src && slen && slen <= MAX_URL && !wf_has_prefix(src, slen, "data:") &&
                   !wf_has_prefix(src, slen, "javascript:");
    if (c->opt->markdown && linkable) {
        begin(c);
        ws(c, "![");
        for (size_t i = 0; i < shown.len; i++) {
            if (shown.data[i] == '[' || shown.data[i] == ']' || shown.data[i] == '\\') ws(c, "\\");
            w(c, shown.data + i, 1);
        }
        ws(c, "](");
        tc_buf url = {0};
        wf_resolve(c->opt->base, src, slen, &url);
        w(c, url.data, url.len);
        tc_buf_free(&url);
        ws(c, ")");
    } else if (shown.len) {
        text(c, shown.data, shown.len);
    }
    tc_buf_free(&shown);
}

/* The data table of the innermost table, NULL when it is a layout table or there is none. */
static table *enclosing_table(md *c) {
    for (int i = (c->depth < MAX_FRAMES ? c->depth : MAX_FRAMES) - 1; i >= 0; i--) {
        if (c->frames[i].kind == K_TABLE) return c->frames[i].table;
        if (c->frames[i].kind == K_LAYOUT) return NULL;
    }
    return NULL;
}

static int in_layout_table(md *c) {
    for (int i = (c->depth < MAX_FRAMES ? c->depth : MAX_FRAMES) - 1; i >= 0; i--) {
        if (c->frames[i].kind == K_TABLE) return 0;
        if (c->frames[i].kind == K_LAYOUT) return 1;
    }
    return 0;
}

static frame *enclosing_list(md *c) {
    for (int i = (c->depth < MAX_FRAMES ? c->depth : MAX_FRAMES) - 1; i >= 0; i--) {
        if (c->frames[i].kind == K_LIST) return &c->frames[i];
        if (c->frames[i].kind == K_ITEM) return NULL;
    }
    return NULL;
}

/* Start an element: 1 when it was entered (its content is read, and leave() ends it), 0
 * when it is done already or skipped. */
static int enter(md *c, lxb_dom_node_t *node) {
    if (node->type == LXB_DOM_NODE_TYPE_TEXT) {
        lxb_dom_character_data_t *t = lxb_dom_interface_character_data(node);
        text(c, (const char *)t->data.data, t->data.length);
        return 0;
    }
    if (node->type != LXB_DOM_NODE_TYPE_ELEMENT) return 0;
    lxb_tag_id_t tag = lxb_dom_node_tag_id(node);
    if (node->ns != LXB_NS_HTML) return 0; /* SVG, MathML */
    if (wf_boilerplate(node, tag, c->articles > 0)) return 0;
    int md = c->opt->markdown;
    switch (tag) {
    case LXB_TAG_BR:
        if (c->pre) ws(c, "\n");
        else if (c->flat) c->space = 1;
        else if (c->line_start || !c->out->len) owe(c, 2);
        else flush_breaks(c), ws(c, "\n"), c->line_start = 1;
        return 0;
    case LXB_TAG_HR:
        owe(c, 2);
        begin(c);
        ws(c, md ? "---" : "----------");
        owe(c, 2);
        return 0;
    case LXB_TAG_IMG:
        image(c, node);
        return 0;
    case LXB_TAG_WBR:
        return 0;
    default:
        break;
    }
    if (c->depth >= MAX_FRAMES) { /* too deep for a frame: text, a break between blocks */
        c->report->flattened = 1;
        c->depth++;
        if (wf_is_block(tag)) owe(c, 1);
        else if (tag == LXB_TAG_TD || tag == LXB_TAG_TH) c->space = 1;
        return 1;
    }
    frame *f = &c->frames[c->depth++];
    *f = (frame){.node = node, .kind = K_NONE, .prefix_len = c->prefix.len};
    if (c->pre) return 1;
    int level = wf_heading_level(tag);
    if (level) {
        owe(c, 2);
        f->level = level;
        if (capture_begin(c, 1, 0)) f->kind = K_HEADING;
        else f->kind = K_BLOCK, f->breaks = 2;
        return 1;
    }
    switch (tag) {
    case LXB_TAG_P: case LXB_TAG_SECTION: case LXB_TAG_DL: case LXB_TAG_FIGURE:
    case LXB_TAG_ADDRESS: case LXB_TAG_DETAILS: case LXB_TAG_FIELDSET: case LXB_TAG_CENTER:
    case LXB_TAG_HEADER: case LXB_TAG_ASIDE: case LXB_TAG_FORM:
        owe(c, 2), f->kind = K_BLOCK, f->breaks = 2;
        break;
    case LXB_TAG_MAIN: case LXB_TAG_ARTICLE:
        owe(c, 2), f->kind = K_ARTICLE, f->breaks = 2, c->articles++;
        break;
    case LXB_TAG_DIV: case LXB_TAG_FIGCAPTION: case LXB_TAG_SUMMARY: case LXB_TAG_CAPTION:
    case LXB_TAG_DT: case LXB_TAG_LEGEND: case LXB_TAG_BODY: case LXB_TAG_HTML:
        owe(c, 1), f->kind = K_BLOCK, f->breaks = 1;
        break;
    case LXB_TAG_DD:
        owe(c, 1), f->kind = K_BLOCK, f->breaks = 1;
        push_prefix(c, "  ");
        break;
    case LXB_TAG_B: case LXB_TAG_STRONG: case LXB_TAG_I: case LXB_TAG_EM:
    case LXB_TAG_DEL: case LXB_TAG_S: case LXB_TAG_STRIKE:
        f->level = tag == LXB_TAG_B || tag == LXB_TAG_STRONG ? 1
                   : tag == LXB_TAG_I || tag == LXB_TAG_EM   ? 2
                                                             : 4;
        if (!md || (c->marks & f->level) || !capture_begin(c, 1, 0)) break;
        f->kind = K_EMPHASIS;
        f->mark = f->level == 1 ? "**" : f->level == 2 ? "*" : "~~";
        c->marks |= f->level;
        break;
    case LXB_TAG_CODE: case LXB_TAG_KBD: case LXB_TAG_SAMP: case LXB_TAG_TT:
        if (md && capture_begin(c, 1, 0)) f->kind = K_CODE;
        break;
    case LXB_TAG_PRE:
        if (c->flat) { /* a code block in a cell or heading: a code span */
            if (md && capture_begin(c, 1, 0)) f->kind = K_CODE;
            break;
        }
        owe(c, 2);
        wf_language(node, &f->href);
        for (lxb_dom_node_t *k = node->first_child; k && !f->href.len; k = k->next)
            if (k->type == LXB_DOM_NODE_TYPE_ELEMENT) {
                if (lxb_dom_node_tag_id(k) == LXB_TAG_CODE) wf_language(k, &f->href);
                break;
            }
        if (capture_begin(c, 0, 1)) f->kind = K_PRE;
        else f->kind = K_BLOCK, f->breaks = 2;
        break;
    case LXB_TAG_A: {
        size_t n;
        const char *href = wf_attr(node, "href", &n);
        if (href && n && n <= MAX_URL && !wf_has_prefix(href, n, "javascript:"))
            wf_resolve(c->opt->base, href, n, &f->href);
        if (md && f->href.len && capture_begin(c, 1, 0)) f->kind = K_LINK;
        break;
    }
    case LXB_TAG_UL: case LXB_TAG_OL: case LXB_TAG_MENU: {
        owe(c, c->list_depth ? 1 : 2);
        f->kind = K_LIST;
        f->breaks = c->list_depth ? 1 : 2;
        c->list_depth++;
        if (tag == LXB_TAG_OL) {
            size_t n;
            const char *start = wf_attr(node, "start", &n);
            f->number = 1;
            if (start && n && n < 8) f->number = atoi(start);
        }
        break;
    }
    case LXB_TAG_LI: {
        owe(c, 1);
        flush_breaks(c);
        frame *list = enclosing_list(c);
        if (list && list->number) snprintf(c->marker_text, sizeof c->marker_text, "%d. ",
                                           list->number++);
        else snprintf(c->marker_text, sizeof c->marker_text, "%s", md ? "- " : "* ");
        if (!c->flat) {
            c->marker_at = c->prefix.len;
            static const char SPACES[] = "            ";
            push_prefix(c, &SPACES[sizeof SPACES - 1 - strlen(c->marker_text)]);
            c->marker = c->marker_text;
            c->line_start = 1;
        }
        f->kind = K_ITEM;
        break;
    }
    case LXB_TAG_BLOCKQUOTE:
        owe(c, 2);
        if (md && !c->flat) push_prefix(c, "> ");
        f->kind = K_QUOTE;
        break;
    case LXB_TAG_TABLE:
        if (c->table_cells || c->flat) {
            c->space = 1;
            break;
        }
        owe(c, 2);
        if (wf_layout_table(node)) {
            f->kind = K_LAYOUT, f->breaks = 2;
            break;
        }
        f->kind = K_TABLE;
        f->table = calloc(1, sizeof *f->table);
        if (!f->table) f->kind = K_BLOCK, f->breaks = 2;
        break;
    case LXB_TAG_TR:
        if (c->table_cells) {
            c->space = 1;
        } else if (in_layout_table(c)) {
            owe(c, 1), f->kind = K_BLOCK, f->breaks = 1;
        } else {
            table *t = enclosing_table(c);
            if (!t) break;
            if (t->rows == t->cap) {
                size_t cap = t->cap ? t->cap * 2 : 16;
                size_t *grown = realloc(t->cells, cap * sizeof *grown);
                if (!grown) break;
                t->cells = grown, t->cap = cap;
            }
            t->cells[t->rows++] = 0;
            f->kind = K_ROW;
        }
        break;
    case LXB_TAG_TD: case LXB_TAG_TH: {
        c->space = 1;
        if (!c->table_cells && in_layout_table(c)) {
            owe(c, 1), f->kind = K_BLOCK, f->breaks = 1;
            break;
        }
        table *t = enclosing_table(c);
        if (c->table_cells || !t || !t->rows || !capture_begin(c, 1, 0)) break;
        f->kind = K_CELL;
        c->table_cells++;
        break;
    }
    default:
        break;
    }
    return 1;
}

static void emit_table(md *c, table *t) {
    size_t columns = 0;
    for (size_t r = 0; r < t->rows; r++)
        if (t->cells[r] > columns) columns = t->cells[r];
    if (columns > MAX_COLUMNS) columns = MAX_COLUMNS;
    if (!columns) return;
    const char *cell = t->text.data;
    int md = c->opt->markdown;
    int first = 1;
    owe(c, 2);
    for (size_t r = 0; r < t->rows; r++) {
        size_t n = t->cells[r];
        if (c->report->output_cut) break;
        if (!n) continue;
        owe(c, 1);
        begin(c);
        for (size_t i = 0; i < n; i++) {
            size_t len = strlen(cell);
            if (i < columns) {
                if (md) ws(c, i ? " " : "| ");
                else if (i) ws(c, "\t");
                w(c, cell, len);
                if (md) ws(c, " |");
            }
            cell += len + 1;
        }
        for (size_t i = n; md && i < columns; i++) ws(c, i ? "  |" : "|  |");
        if (first && md) {
            owe(c, 1);
            begin(c);
            ws(c, "|");
            for (size_t i = 0; i < columns; i++) ws(c, " --- |");
        }
        first = 0;
    }
    owe(c, 2);
}

/* Finish an element entered by enter(). */
static void leave(md *c, lxb_dom_node_t *node) {
    if (node->type != LXB_DOM_NODE_TYPE_ELEMENT || !c->depth) return;
    if (c->depth > MAX_FRAMES) {
        c->depth--;
        if (wf_is_block(lxb_dom_node_tag_id(node))) owe(c, 1);
        return;
    }
    if (c->frames[c->depth - 1].node != node) return;
    frame *f = &c->frames[--c->depth];
    char *s = NULL;
    size_t n = 0;
    int md = c->opt->markdown, lead = 0, trail = 0;
    switch (f->kind) {
    case K_BLOCK: case K_ARTICLE: case K_LAYOUT:
        if (f->kind == K_ARTICLE) c->articles--;
        c->prefix.len = f->prefix_len;
        owe(c, f->breaks);
        break;
    case K_HEADING: {
        n = capture_end(c, &s, &lead, &trail);
        tc_buf line = {0};
        flatten(&line, s, n, 0);
        if (line.len) {
            owe(c, 2);
            begin(c);
            for (int i = 0; md && i < f->level; i++) ws(c, "#");
            if (md) ws(c, " ");
            w(c, line.data, line.len);
        }
        tc_buf_free(&line);
        owe(c, 2);
        break;
    }
    case K_EMPHASIS: {
        c->marks &= ~f->level;
        n = capture_end(c, &s, &lead, &trail);
        int cut_lead, cut_trail;
        const char *t = trim(s, &n, &cut_lead, &cut_trail);
        trail |= cut_trail;
        if (lead || cut_lead) c->space = 1;
        if (n) {
            begin(c);
            ws(c, f->mark);
            w(c, t, n);
            ws(c, f->mark);
        }
        if (trail) c->space = 1;
        break;
    }
    case K_CODE: {
        n = capture_end(c, &s, &lead, &trail);
        tc_buf line = {0};
        flatten(&line, s, n, 0);
        if (lead) c->space = 1;
        if (line.len) {
            size_t run = 0, longest = 0;
            for (size_t i = 0; i < line.len; i++)
                run = line.data[i] == '`' ? run + 1 : 0, longest = run > longest ? run : longest;
            begin(c);
            for (size_t i = 0; i <= longest; i++) ws(c, "`");
            if (longest) ws(c, " ");
            w(c, line.data, line.len);
            if (longest) ws(c, " ");
            for (size_t i = 0; i <= longest; i++) ws(c, "`");
        }
        if (trail) c->space = 1;
        tc_buf_free(&line);
        break;
    }
    case K_PRE: {
        n = capture_end(c, &s, &lead, &trail);
        while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
        size_t start = 0;
        while (start < n && s[start] == '\n') start++;
        if (start == n) break;
        size_t run = 0, longest = 2;
        for (size_t i = start; i < n; i++)
            run = s[i] == '`' ? run + 1 : 0, longest = run > longest ? run : longest;
        owe(c, 2);
        begin(c);
        if (md) {
            for (size_t i = 0; i <= longest; i++) ws(c, "`");
            w(c, f->href.data, f->href.len);
        }
        for (size_t i = start; i < n;) {
            size_t e = i;
            while (e < n && s[e] != '\n') e++;
            if (md || i > start) ws(c, "\n"), write_prefix(c, e == i);
            w(c, s + i, e - i);
            i = e + 1;
        }
        if (md) {
            ws(c, "\n");
            write_prefix(c, 0);
            for (size_t i = 0; i <= longest; i++) ws(c, "`");
        }
        owe(c, 2);
        break;
    }
    case K_LINK: {
        n = capture_end(c, &s, &lead, &trail);
        tc_buf label = {0};
        flatten(&label, s, n, 0);
        if (lead) c->space = 1;
        if (label.len) {
            begin(c);
            ws(c, "[");
            w(c, label.data, label.len);
            ws(c, "](");
            w(c, f->href.data, f->href.len);
            ws(c, ")");
        }
        if (trail) c->space = 1;
        tc_buf_free(&label);
        break;
    }
    case K_LIST:
        c->list_depth--;
        owe(c, f->breaks);
        break;
    case K_ITEM:
        c->prefix.len = f->prefix_len;
        if (!c->flat) c->marker = NULL;
        owe(c, 1);
        break;
    case K_QUOTE:
        c->prefix.len = f->prefix_len;
        owe(c, 2);
        break;
    case K_TABLE:
        emit_table(c, f->table);
        tc_buf_free(&f->table->text);
        free(f->table->cells);
        free(f->table);
        break;
    case K_CELL: {
        c->table_cells--;
        n = capture_end(c, &s, &lead, &trail);
        table *t = enclosing_table(c);
        if (t) {
            if (md) flatten(&t->text, s, n, 1);
            else flatten(&t->text, s, n, 0);
            tc_buf_putc(&t->text, '\0');
            t->cells[t->rows - 1]++;
        }
        c->space = 1;
        break;
    }
    default:
        break;
    }
    free(s);
    tc_buf_free(&f->href);
}

/* Blank lines squeezed to one, trailing spaces of lines and the ends trimmed. */
static void tidy(tc_buf *out) {
    size_t o = 0;
    int newlines = 0;
    for (size_t i = 0; i < out->len; i++) {
        char ch = out->data[i];
        if (ch == '\n') {
            while (o && out->data[o - 1] == ' ') o--;
            if (++newlines > 2 || o == 0) continue;
        } else {
            newlines = 0;
        }
        out->data[o++] = ch;
    }
    while (o && (out->data[o - 1] == '\n' || out->data[o - 1] == ' ')) o--;
    out->len = o;
    tc_buf_cstr(out);
}

void wf_markdown(lxb_dom_node_t *root, const wf_options *options, tc_buf *out,
                 wf_report *report) {
    md *c = calloc(1, sizeof *c);
    if (!c) return;
    c->opt = options;
    c->out = out;
    c->report = report;
    c->articles = options->in_article;
    c->line_start = 1;
    lxb_dom_node_t *node = root->first_child;
    while (node && !report->output_cut) {
        int entered = enter(c, node);
        if (entered && node->first_child) {
            node = node->first_child;
            continue;
        }
        if (entered && !report->output_cut) leave(c, node);
        while (!report->output_cut && !node->next && node->parent && node->parent != root) {
            node = node->parent;
            leave(c, node);
        }
        node = node->next;
    }
    /* Stopped early: what open captures hold (a code block, a table cell) goes out as it
     * is, outermost first; it was counted against max_output as it was captured. */
    for (int i = 0; i < c->ncaptures; i++) {
        tc_buf *held = &c->captures[i].buf;
        if (held->len) tc_buf_puts(out, "\n\n");
        tc_buf_put(out, held->data ? held->data : "", held->len);
    }
    while (c->ncaptures) {
        char *s;
        int lead, trail;
        capture_end(c, &s, &lead, &trail);
        free(s);
    }
    for (int i = (c->depth < MAX_FRAMES ? c->depth : MAX_FRAMES) - 1; i >= 0; i--) {
        tc_buf_free(&c->frames[i].href);
        if (c->frames[i].kind == K_TABLE) {
            tc_buf_free(&c->frames[i].table->text);
            free(c->frames[i].table->cells);
            free(c->frames[i].table);
        }
    }
    tc_buf_free(&c->prefix);
    free(c);
    tidy(out);
}
