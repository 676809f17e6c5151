/*
 * Checks shared by the CPU-only suites. A failed check prints "FAIL file:line: what
 * differed" and counts; the program goes on (so one run shows every broken property) and
 * exits 1 at the end through check_exit_code(). Status names are spelled out here rather
 * than taken from gs_status_string(), which is itself under test.
 */
#ifndef GS_TEST_CHECK_H
#define GS_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

#include "gridsync.h"

/* A program of several files counts its failures once: it defines CHECK_FAILURES_EXTERN
 * before including this header everywhere, and `int check_failures;` in one file. */
#ifdef CHECK_FAILURES_EXTERN
extern int check_failures;
#else
static int check_failures __attribute__((unused));
#endif

static inline const char *check_status_name(int status)
{
    static const char *const names[] = {
        "GS_SUCCESS",
        "GS_ERROR_INVALID_ARGUMENT",
        "GS_ERROR_UNSUPPORTED",
        "GS_ERROR_NO_DRIVER",
        "GS_ERROR_NO_DEVICE",
        "GS_ERROR_BACKEND_NOT_FOUND",
        "GS_ERROR_BACKEND_ABI_MISMATCH",
        "GS_ERROR_BACKEND_INCOMPLETE",
        "GS_ERROR_BACKEND_INIT_FAILED",
        "GS_ERROR_NO_KERNEL_IMAGE",
        "GS_ERROR_OUT_OF_MEMORY",
        "GS_ERROR_CUDA",
        "GS_ERROR_INVALID_POINTER",
        "GS_ERROR_INVALID_CONTEXT",
        "GS_ERROR_INTERNAL",
    };
    if (status >= 0 && (size_t)status < sizeof names / sizeof names[0])
        return names[status];
    return "(not a gs_status)";
}

#define CHECK_FAIL(...)                                                  \
    do {                                                                 \
        check_failures++;                                                \
        fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);             \
        fprintf(stderr, __VA_ARGS__);                                    \
        fputc('\n', stderr);                                             \
    } while (0)

#define CHECK(cond)                                      \
    do {                                                 \
        if (!(cond))                                     \
            CHECK_FAIL("expected %s", #cond);            \
    } while (0)

/* `call` must return `expected`; on a mismatch the library's detail message is shown. */
#define CHECK_STATUS(call, expected)                                                              \
    do {                                                                                          \
        int got_ = (int)(call);                                                                   \
        int want_ = (int)(expected);                                                              \
        if (got_ != want_)                                                                        \
            CHECK_FAIL("%s returned %s (%d), expected %s (%d); message: \"%s\"", #call,           \
                       check_status_name(got_), got_, check_status_name(want_), want_,            \
                       gs_last_error_message());                                                  \
    } while (0)

#define CHECK_INT(a, b)                                                                           \
    do {                                                                                          \
        long long a_ = (long long)(a), b_ = (long long)(b);                                       \
        if (a_ != b_)                                                                             \
            CHECK_FAIL("%s is %lld, expected %s = %lld", #a, a_, #b, b_);                         \
    } while (0)

#define CHECK_STR(a, b)                                                                           \
    do {                                                                                          \
        const char *a_ = (a), *b_ = (b);                                                          \
        if (!a_ || !b_ || strcmp(a_, b_) != 0)                                                    \
            CHECK_FAIL("%s is \"%s\", expected \"%s\"", #a, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
    } while (0)

/* `text` must contain `needle`. */
#define CHECK_HAS(text, needle)                                                                   \
    do {                                                                                          \
        const char *t_ = (text), *n_ = (needle);                                                  \
        if (!t_ || !strstr(t_, n_))                                                               \
            CHECK_FAIL("%s does not mention \"%s\"; it is:\n  \"%s\"", #text, n_, t_ ? t_ : "(null)"); \
    } while (0)

#define CHECK_HAS_NOT(text, needle)                                                               \
    do {                                                                                          \
        const char *t_ = (text), *n_ = (needle);                                                  \
        if (t_ && strstr(t_, n_))                                                                 \
            CHECK_FAIL("%s mentions \"%s\" but must not; it is:\n  \"%s\"", #text, n_, t_);       \
    } while (0)

static inline int check_exit_code(void)
{
    if (check_failures)
        fprintf(stderr, "%d check%s failed\n", check_failures, check_failures == 1 ? "" : "s");
    return check_failures ? 1 : 0;
}

#endif
