/* Allocates (and touches) memory without bound; aborts when malloc finally fails. */
#include <stdlib.h>
#include <string.h>

char *volatile last; /* keeps the allocations observable, so they are not optimised away */

int main(void) {
    for (;;) {
        char *p = malloc(1 << 20);
        if (!p) abort();
        memset(p, 1, 1 << 20);
        last = p;
    }
}
