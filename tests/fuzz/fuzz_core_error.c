/*
 * core/error.c as the fuzz harnesses link it, plus fuzz_reset_debug(): the library reads
 * GRIDSYNC_DEBUG once per process (pthread_once), and fuzz_env sets it anew from every
 * input, so it must make the library forget the value it read. The reset is glibc's
 * pthread_once_t (an int, PTHREAD_ONCE_INIT 0) and single-threaded: test code only.
 */
#include "../../core/error.c"

void fuzz_reset_debug(void);
void fuzz_reset_debug(void)
{
    g_debug_once = (pthread_once_t)PTHREAD_ONCE_INIT;
    g_debug = 0;
}
