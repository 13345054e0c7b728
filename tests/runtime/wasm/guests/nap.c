/* Sleeps 300 ms (a blocking host call), then prints "rested". */
#include <stdio.h>
#include <time.h>

int main(void) {
    struct timespec t = {0, 300 * 1000 * 1000};
    nanosleep(&t, NULL);
    fputs("rested", stdout);
    return 0;
}
