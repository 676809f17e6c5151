/* loader cases: the driver -- none, too old, incomplete, failing cuInit, no device, ordinals. */
#include "fixture.h"

#include <dlfcn.h>

/* Valid-looking arguments: they get past the cheap checks to the driver. */
static gs_status reduce_without_context(void)
{
    return gs_reduce(NULL, (const void *)(uintptr_t)0x10000, 10, GS_FLOAT32, GS_OP_SUM, (void *)(uintptr_t)0x20000,
                     NULL);
}

static int no_driver(void)
{
    /* Only meaningful where no libcuda.so.1 is reachable without the fake's directory. */
    void *real = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (real) {
        printf("skipped: this machine has a libcuda.so.1 outside LD_LIBRARY_PATH, so 'no driver' "
               "cannot be arranged\n");
        return SKIP;
    }
    gs_context *ctx = (gs_context *)&ctx; /* must be reset to NULL */
    CHECK_STATUS(gs_context_create(0, &ctx), GS_ERROR_NO_DRIVER);
    CHECK(ctx == NULL);
    CHECK_HAS(gs_last_error_message(), "libcuda.so.1");
    int n = -1, v = -1;
    CHECK_STATUS(gs_device_count(&n), GS_ERROR_NO_DRIVER);
    CHECK_HAS(gs_last_error_message(), "libcuda.so.1");
    CHECK_INT(n, 0);
    CHECK_STATUS(gs_driver_version(&v), GS_ERROR_NO_DRIVER);
    CHECK_INT(v, 0);
    CHECK_STATUS(reduce_without_context(), GS_ERROR_NO_DRIVER);
    CHECK_HAS(gs_last_error_message(), "libcuda.so.1");
    /* The outcome is remembered: the same answer again. */
    CHECK_STATUS(gs_context_create(0, &ctx), GS_ERROR_NO_DRIVER);
    CHECK_HAS(gs_last_error_message(), "libcuda.so.1");
    /* What an application prints, the status's text and then the message, says that there
     * is no driver once: the message goes on with the call that failed and why. */
    char line[1024];
    snprintf(line, sizeof line, "%s: %s", gs_status_string(GS_ERROR_NO_DRIVER), gs_last_error_message());
    CHECK_HAS(line, "GS_ERROR_NO_DRIVER: no usable CUDA driver: dlopen(\"libcuda.so.1\") failed: ");
    int says = 0;
    for (const char *p = line; (p = strstr(p, "CUDA driver")) != NULL; p++)
        says++;
    CHECK_INT(says, 1);
    return 0;
}

/* A driver that is there but unusable: context creation fails with the case's `want` and
 * says why (`arg`: the words the message must hold, '|' between them); so does
 * gs_device_count. */
static int unusable_driver(const test_case *c)
{
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), c->want);
    char words[256];
    snprintf(words, sizeof words, "%s", c->arg);
    for (char *save = NULL, *w = strtok_r(words, "|", &save); w; w = strtok_r(NULL, "|", &save))
        CHECK_HAS(gs_last_error_message(), w);
    int n = -1;
    CHECK_STATUS(gs_device_count(&n), c->want);
    return 0;
}

static int init_error(void)
{
    /* The driver library is there and knows its version even though cuInit failed. */
    unusable_driver(&(test_case){.want = GS_ERROR_NO_DRIVER, .arg = "cuInit|CUDA_ERROR_UNKNOWN"});
    int v = 0;
    CHECK_STATUS(gs_driver_version(&v), GS_SUCCESS);
    CHECK_INT(v, 12080); /* FAKE_CUDA_VERSION */
    return 0;
}

static int no_device(void)
{
    int n = -1, v = 0;
    CHECK_STATUS(gs_device_count(&n), GS_SUCCESS); /* zero devices is an answer */
    CHECK_INT(n, 0);
    CHECK_STATUS(gs_driver_version(&v), GS_SUCCESS);
    CHECK_INT(v, 13000);
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(0, &ctx), GS_ERROR_NO_DEVICE);
    CHECK_HAS(gs_last_error_message(), "CUDA_ERROR_NO_DEVICE");
    CHECK_STATUS(reduce_without_context(), GS_ERROR_NO_DEVICE);
    return 0;
}

static int device_ordinal(void)
{
    app_init(1);
    live_counts before = live_now();
    int n = -1;
    CHECK_STATUS(gs_device_count(&n), GS_SUCCESS);
    CHECK_INT(n, 2);
    gs_context *ctx = NULL;
    CHECK_STATUS(gs_context_create(2, &ctx), GS_ERROR_NO_DEVICE);
    CHECK_HAS(gs_last_error_message(), "device 2");
    CHECK_HAS(gs_last_error_message(), "2 CUDA devices");
    CHECK_STATUS(gs_context_create(-1, &ctx), GS_ERROR_NO_DEVICE);
    CHECK_HAS(gs_last_error_message(), "device -1");
    CHECK(ctx == NULL);
    CHECK_STATUS(gs_context_create(1, &ctx), GS_SUCCESS);
    gs_context_info info;
    CHECK_STATUS(get_info(ctx, &info), GS_SUCCESS);
    CHECK_INT(info.device, 1);
    CHECK_STR(info.device_name, "Fake CUDA Device 1");
    CHECK_STATUS(gs_context_destroy(ctx), GS_SUCCESS);
    CHECK_INT(backend_log_lines("fake_good: open device=1 "), 1);
    CHECK_INT(backend_log_lines("fake_good: open "), 1);
    CHECK_RELEASED(before);
    return 0;
}

const test_case driver_cases[] = {
    CASE("no-driver", no_driver, NO_DRIVER, REAL_PATH),
    CASE_WITH("old-driver", unusable_driver, GS_ERROR_NO_DRIVER, "libcuda.so.1|cuGetProcAddress_v2|12.0",
              OLD_DRIVER, REAL_PATH),
    CASE_WITH("driver-lacks-function", unusable_driver, GS_ERROR_NO_DRIVER, "cuStreamGetId|libcuda.so.1",
              "FAKE_CUDA_MISSING=cuStreamGetId", REAL_PATH),
    CASE("init-error", init_error, "FAKE_CUDA_INIT_ERROR=999", "FAKE_CUDA_VERSION=12080", REAL_PATH),
    CASE("no-device", no_device, "FAKE_CUDA_DEVICES=0", REAL_PATH),
    CASE("device-ordinal", device_ordinal, "FAKE_CUDA_DEVICES=2", USE_GOOD),
    END_OF_CASES,
};
