/* Calls the test host binding toolcage_test_v1.ping and prints what it returned. */
#include <stdint.h>
#include <stdio.h>

__attribute__((import_module("toolcage_test_v1"), import_name("ping"))) int32_t ping(int32_t x);

int main(void) {
    printf("%d", (int)ping(2));
    return 0;
}
