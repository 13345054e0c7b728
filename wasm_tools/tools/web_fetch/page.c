/*
 * Parsing and choosing the content of a page (see page.h).
 *
 * lexbor allocates through functions it lets its user set: here they count what it holds
 * and refuse what would take it past its budget. lexbor checks its allocations, so a
 * refusal ends the parse with an error status and the document as far as it got, where
 * the guest's own memory limit would end the guest with a trap.
 *
 * The depth of the tree is watched too: the tree builder looks through the stack of open
 * elements for many tags (is there a <p> to close?), so a page of 100,000 nested elements
 * would cost it billions of steps. The document is fed in chunks small enough that one
 * chunk past the limit costs little.
 *
 * A page costs time in proportion to its size; four places in lexbor would not, and are
 * kept from it here without changing lexbor:
 *   - an element's attributes: the tree builder adds each one after looking for it among
 *     those the element already has (a repeated name keeps its first value), so one tag
 *     of n attributes costs n^2/2 steps. A filter between the tokenizer and the tree
 *     builder (page_token) keeps the first WF_MAX_ATTRS of a tag and gives the others
 *     back to the tokenizer unseen.
 *   - a second <body> or <html> tag adds its attributes to the element that exists, again
 *     each after a look through the ones it has: the filter drops the attributes of each
 *     such tag after the first.
 *   - the document's tables of tag and attribute names have a fixed 128 slots, each a
 *     list, so a page of n distinct names costs n^2/256 steps; they are made with a slot
 *     for every WF_NAME_BYTES bytes of the page instead.
 *   - each <option> inserted runs the HTML steps that decide which option of its <select>
 *     is selected, a walk over all of them: n^2/2 for a select of n options. Which one is
 *     selected is nothing to the text (a <select> is not shown at all), so the document
 *     runs the DOM's own insertion steps, which have none of these.
 */
#include "page.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "elements.h"
#include "url.h"

#define CHUNK (16 * 1024)

static size_t held;   /* bytes lexbor holds */
static size_t budget; /* bytes it may hold */
static size_t linear; /* bytes of linear memory past which it gets no more */
static int refused;   /* an allocation of lexbor's failed */

static void *counted(void *p) {
    if (p) held += malloc_usable_size(p);
    else refused = 1;
    return p;
}

/* Whether `size` more bytes (`old` of them given back) stay within both budgets. What
 * lexbor holds undercounts what it costs -- the allocator's slack, blocks left behind by
 * growing arrays -- so linear memory is watched too. */
static int fits(size_t size, size_t old) {
    size_t memory = __builtin_wasm_memory_size(0) * 65536;
    return held - old + size <= budget && memory + size <= linear;
}

static void *budget_malloc(size_t size) { return counted(fits(size, 0) ? malloc(size) : NULL); }

static void *budget_calloc(size_t num, size_t size) {
    if (size && num > budget / size) return counted(NULL);
    return counted(fits(num * size, 0) ? calloc(num, size) : NULL);
}

static void *budget_realloc(void *dst, size_t size) {
    size_t old = dst ? malloc_usable_size(dst) : 0;
    void *p = fits(size, old) ? realloc(dst, size) : NULL;
    if (p) held -= old;
    return counted(p);
}

static void budget_free(void *dst) {
    if (dst) held -= malloc_usable_size(dst);
    free(dst);
}

/* The tree builder's own token callback, which page_token hands each token on to. */
static lxb_html_tokenizer_token_f tree_callback;
static void *tree_ctx;
static int bodies, htmls; /* <body> and <html> start tags seen */

/* Drop the attributes of `token` from `attr` on, their memory (and their values') handed
 * back to the tokenizer for the next ones. */
static void drop_attributes(lxb_html_tokenizer_t *tkz, lxb_html_token_t *token,
                            lxb_html_token_attr_t *attr) {
    while (attr) {
        lxb_html_token_attr_t *next = attr->next;
        if (attr->value) lexbor_mraw_free(tkz->attrs_mraw, attr->value);
        lxb_html_token_attr_delete(token, attr, tkz->dobj_token_attr);
        attr = next;
    }
}

/* Between the tokenizer and the tree builder: at most WF_MAX_ATTRS attributes a tag, none
 * on a repeated <body> or <html> (see the top of this file). */
static lxb_html_token_t *page_token(lxb_html_tokenizer_t *tkz, lxb_html_token_t *token,
                                    void *ctx) {
    (void)ctx;
    lxb_html_token_attr_t *attr = token->attr_first;
    if (attr && !(token->type & LXB_HTML_TOKEN_TYPE_CLOSE)) {
        int *seen = token->tag_id == LXB_TAG_BODY   ? &bodies
                    : token->tag_id == LXB_TAG_HTML ? &htmls
                                                    : NULL;
        if (seen && (*seen)++) {
            drop_attributes(tkz, token, attr);
        } else {
            for (size_t n = 1; attr && n < WF_MAX_ATTRS; n++) attr = attr->next;
            if (attr) drop_attributes(tkz, token, attr->next);
        }
    }
    return tree_callback(tkz, token, tree_ctx);
}

/* A table of names with a slot for every WF_NAME_BYTES bytes of an `n`-byte page, in
 * place of `*table` (which is kept when the new one cannot be made). */
static void widen(lexbor_hash_t **table, size_t n, size_t struct_size) {
    size_t slots = n / WF_NAME_BYTES;
    if (slots <= 128) return;
    if (slots > WF_NAME_SLOTS) slots = WF_NAME_SLOTS;
    lexbor_hash_t *wide = lexbor_hash_create();
    if (!wide || lexbor_hash_init(wide, slots, struct_size) != LXB_STATUS_OK) {
        lexbor_hash_destroy(wide, true);
        return;
    }
    lexbor_hash_destroy(*table, true);
    *table = wide;
}

/* Elements open at once in the tree builder. */
static size_t open_elements(lxb_html_document_t *doc) {
    lxb_html_parser_t *parser = doc->dom_document.parser;
    lxb_html_tree_t *tree = parser ? lxb_html_parser_tree(parser) : NULL;
    return tree && tree->open_elements ? tree->open_elements->length : 0;
}

lxb_html_document_t *wf_parse(const char *html, size_t n, size_t memory_budget,
                              size_t linear_budget, int *cut) {
    *cut = 0;
    budget = memory_budget;
    linear = linear_budget;
    held = 0;
    refused = 0;
    lexbor_memory_setup(budget_malloc, budget_realloc, budget_calloc, budget_free);
    lxb_html_document_t *doc = lxb_html_document_create();
    if (!doc) return NULL;
    lxb_dom_document_mutation_init(&doc->dom_document);
    widen(&doc->dom_document.tags, n, sizeof(lxb_tag_data_t));
    widen(&doc->dom_document.attrs, n, sizeof(lxb_dom_attr_data_t));
    if (lxb_html_document_parse_chunk_begin(doc) != LXB_STATUS_OK) {
        lxb_html_document_destroy(doc);
        return NULL;
    }
    lxb_html_tokenizer_t *tkz = doc->dom_document.parser
                                    ? lxb_html_parser_tokenizer(doc->dom_document.parser)
                                    : NULL;
    if (tkz) {
        tree_callback = tkz->callback_token_done;
        tree_ctx = tkz->callback_token_ctx;
        bodies = htmls = 0;
        lxb_html_tokenizer_callback_token_done_set(tkz, page_token, NULL);
    }
    for (size_t at = 0, len; at < n; at += len) {
        len = n - at < CHUNK ? n - at : CHUNK;
        /* End a chunk before a '<', so that a parse stopped after it ends between tags. */
        size_t end = len;
        while (at + len < n && end > CHUNK / 2 && html[at + end - 1] != '<') end--;
        if (at + len < n && end > CHUNK / 2) len = end - 1;
        if (open_elements(doc) > WF_MAX_OPEN) {
            *cut = WF_CUT_DEPTH;
            break;
        }
        if (lxb_html_document_parse_chunk(doc, (const lxb_char_t *)html + at, len) !=
            LXB_STATUS_OK) {
            *cut = WF_CUT_MEMORY;
            break;
        }
    }
    lxb_html_document_parse_chunk_end(doc);
    /* lexbor may drop what it could not allocate and go on */
    if (refused && !*cut) *cut = WF_CUT_MEMORY;
    return doc;
}

void wf_title(lxb_html_document_t *doc, tc_buf *into) {
    size_t len = 0;
    const lxb_char_t *title = lxb_html_document_title(doc, &len);
    if (title && len) tc_buf_put(into, (const char *)title, len);
    else tc_buf_cstr(into);
}

static int is_html(lxb_dom_node_t *node, lxb_tag_id_t tag) {
    return node->type == LXB_DOM_NODE_TYPE_ELEMENT && node->ns == LXB_NS_HTML &&
           lxb_dom_node_tag_id(node) == tag;
}

/* A <main>, or an element that says it is one (role="main"). */
static int is_main(lxb_dom_node_t *node) {
    if (is_html(node, LXB_TAG_MAIN)) return 1;
    if (node->type != LXB_DOM_NODE_TYPE_ELEMENT) return 0;
    size_t len = 0;
    const char *role = wf_attr(node, "role", &len);
    return role && len == 4 && memcmp(role, "main", 4) == 0;
}

lxb_dom_node_t *wf_content_root(lxb_html_document_t *doc, int *in_article) {
    lxb_dom_node_t *top = lxb_dom_interface_node(doc);
    lxb_dom_node_t *article = NULL;
    size_t articles = 0;
    /* Depth first, without recursion: the tree may be as deep as the page is long. */
    for (lxb_dom_node_t *node = top->first_child; node;) {
        if (is_main(node)) {
            *in_article = 1;
            return node;
        }
        if (is_html(node, LXB_TAG_ARTICLE) && articles++ == 0) article = node;
        if (node->first_child && node->type == LXB_DOM_NODE_TYPE_ELEMENT) {
            node = node->first_child;
            continue;
        }
        while (node && node != top && !node->next) node = node->parent;
        node = node && node != top ? node->next : NULL;
    }
    if (articles == 1) {
        *in_article = 1;
        return article;
    }
    *in_article = 0;
    lxb_html_body_element_t *body = lxb_html_document_body_element(doc);
    if (body) return lxb_dom_interface_node(body);
    lxb_dom_element_t *root = lxb_dom_document_element(lxb_dom_interface_document(doc));
    return root ? lxb_dom_interface_node(root) : top;
}

void wf_base_url(lxb_html_document_t *doc, const char *url, tc_buf *into) {
    lxb_html_head_element_t *head = lxb_html_document_head_element(doc);
    for (lxb_dom_node_t *node = head ? lxb_dom_interface_node(head)->first_child : NULL; node;
         node = node->next) {
        if (!is_html(node, LXB_TAG_BASE)) continue;
        size_t len = 0;
        const char *href = wf_attr(node, "href", &len);
        if (!href || !len || len > 4096) continue;
        wf_resolve(url, href, len, into);
        if (strstr(tc_buf_cstr(into), "://")) return;
        into->len = 0;
    }
    if (url) tc_buf_puts(into, url);
    tc_buf_cstr(into);
}
