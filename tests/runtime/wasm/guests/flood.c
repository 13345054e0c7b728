/* Prints 100 MB to stdout, then exits normally. */
#include <string.h>
#include <unistd.h>

int main(void) {
    static char chunk[1 << 16];
    memset(chunk, 'x', sizeof chunk);
    for (int i = 0; i < 1600; i++) write(1, chunk, sizeof chunk);
    return 0;
}
