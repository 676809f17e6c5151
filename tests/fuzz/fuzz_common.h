/*
 * What the libFuzzer harnesses share: reading typed values off the fuzz input, loading
 * the fake CUDA driver (tests/fake/fake_cuda.c) into the process, and a check that aborts
 * (so libFuzzer keeps the input that broke a property, as it does for a crash). Files and
 * the environment are set up with tests/fake/sandbox.h, as the loader suite does.
 *
 * FUZZ_FAKE_DIR (set by scripts/ci-fuzz.sh) is the directory holding the fake driver as
 * libcuda.so.1 and the fake backends as gridsync-fake_<variant>.so.
 */
#ifndef GS_FUZZ_COMMON_H
#define GS_FUZZ_COMMON_H

#ifndef _GNU_SOURCE
#  define _GNU_SOURCE
#endif
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fake/sandbox.h"
#include "gridsync.h"

#ifndef FUZZ_FAKE_DIR
#  error "FUZZ_FAKE_DIR (where the fake libcuda.so.1 and fake backends are) must be defined"
#endif

#define FUZZ_CHECK(cond, ...)                                                   \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "FUZZ CHECK FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                       \
            fprintf(stderr, "\n  last message: \"%s\"\n", gs_last_error_message()); \
            abort();                                                            \
        }                                                                       \
    } while (0)

/* ---- the input ------------------------------------------------------------------------ */

typedef struct fuzz_input {
    const uint8_t *p;
    size_t n;
} fuzz_input;

/* Little-endian integers off the front; zeros once the input is used up. */
static inline uint64_t fuzz_take(fuzz_input *in, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes && in->n; i++, in->p++, in->n--)
        v |= (uint64_t)in->p[0] << (8 * i);
    return v;
}
static inline uint8_t fuzz_u8(fuzz_input *in) { return (uint8_t)fuzz_take(in, 1); }
static inline uint32_t fuzz_u32(fuzz_input *in) { return (uint32_t)fuzz_take(in, 4); }
static inline uint64_t fuzz_u64(fuzz_input *in) { return fuzz_take(in, 8); }

/* An int that is usually near the valid range (so validation is passed often enough to
 * reach what comes after it) and sometimes anything at all. */
static inline int32_t fuzz_small_or_any(fuzz_input *in, int32_t lo, int32_t hi)
{
    uint8_t sel = fuzz_u8(in);
    if (sel & 0x80)
        return (int32_t)fuzz_u32(in);
    return lo + (int32_t)(sel % (uint32_t)(hi - lo + 1));
}

/* The bytes up to the next NUL (or the end), as a new NUL-terminated string. */
static inline char *fuzz_cstr(fuzz_input *in)
{
    size_t len = 0;
    while (len < in->n && in->p[len])
        len++;
    char *s = malloc(len + 1);
    if (!s)
        abort();
    memcpy(s, in->p, len);
    s[len] = '\0';
    size_t used = len < in->n ? len + 1 : len;
    in->p += used;
    in->n -= used;
    return s;
}

/* ---- the fake driver ------------------------------------------------------------------ */

/* What the harness does with the driver, as an application would: through the same
 * libcuda.so.1 that gridsync loads. */
typedef struct fuzz_driver {
    PFN_cuGetProcAddress_v12000 get_proc;
    PFN_cuInit_v2000 init;
    PFN_cuDevicePrimaryCtxRetain_v7000 retain;
    PFN_cuCtxPushCurrent_v4000 push;
    PFN_cuCtxPopCurrent_v4000 pop;
    PFN_cuMemAlloc_v3020 alloc;
    PFN_cuStreamCreate_v2000 stream_create;
    PFN_cuPointerGetAttributes_v7000 pointer_attributes;
    long (*live)(const char *kind);
} fuzz_driver;

/* Loads FUZZ_FAKE_DIR/libcuda.so.1 with RTLD_GLOBAL before gridsync looks for a driver:
 * gridsync's dlopen("libcuda.so.1") then finds this object by its SONAME, so neither
 * LD_LIBRARY_PATH nor a real driver on the machine matters. */
static inline void fuzz_load_driver(fuzz_driver *d)
{
    void *lib = dlopen(FUZZ_FAKE_DIR "/libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
        fprintf(stderr, "cannot load the fake driver: %s\n", dlerror());
        abort();
    }
    d->live = (long (*)(const char *))dlsym(lib, "fake_cuda_live");
    d->get_proc = (PFN_cuGetProcAddress_v12000)dlsym(lib, "cuGetProcAddress_v2");
    if (!d->live || !d->get_proc) {
        fprintf(stderr, FUZZ_FAKE_DIR "/libcuda.so.1 is not the fake driver\n");
        abort();
    }
#define FUZZ_RESOLVE(member, name, version)                                                       \
    if (d->get_proc(#name, (void **)&d->member, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, NULL) != \
        CUDA_SUCCESS)                                                                              \
        abort();
    FUZZ_RESOLVE(init, cuInit, 2000)
    FUZZ_RESOLVE(retain, cuDevicePrimaryCtxRetain, 7000)
    FUZZ_RESOLVE(push, cuCtxPushCurrent, 4000)
    FUZZ_RESOLVE(pop, cuCtxPopCurrent, 4000)
    FUZZ_RESOLVE(alloc, cuMemAlloc, 3020)
    FUZZ_RESOLVE(stream_create, cuStreamCreate, 2000)
    FUZZ_RESOLVE(pointer_attributes, cuPointerGetAttributes, 7000)
#undef FUZZ_RESOLVE
}

/* What both harnesses start with: an environment a developer's shell cannot change, two
 * fake devices, and the fake driver loaded. */
static inline void fuzz_setup(fuzz_driver *d)
{
    sandbox_clean_environment();
    setenv("FAKE_CUDA_DEVICES", "2", 1);
    fuzz_load_driver(d);
}

/* The thread's detail message is always a NUL-terminated string of bounded length. */
static inline void fuzz_check_message(void)
{
    const char *m = gs_last_error_message();
    FUZZ_CHECK(m != NULL, "gs_last_error_message() is NULL");
    FUZZ_CHECK(strnlen(m, 4096) < 4096, "the message is not terminated within 4096 bytes");
}

#endif
