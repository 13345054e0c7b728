/* Exits with status 3 after a line on stderr. */
#include <stdio.h>

int main(void) {
    fputs("something broke\n", stderr);
    return 3;
}
