/* Shows names the way every tool does (tc_buf_put_name): reads records from stdin, each a
 * 4-byte little-endian length and that many bytes, and writes each shown form on a line. */
#include <stdio.h>
#include <stdlib.h>

#include "toolcage.h"

int main(void) {
    tc_buf in = {0}, out = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0) tc_buf_put(&in, chunk, n);
    for (size_t at = 0; at + 4 <= in.len;) {
        const unsigned char *p = (const unsigned char *)in.data + at;
        size_t len = p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
        at += 4;
        if (at + len > in.len) return 1;
        tc_buf_put_name(&out, in.data + at, len);
        tc_buf_putc(&out, '\n');
        at += len;
    }
    fwrite(out.data, 1, out.len, stdout);
    return 0;
}
