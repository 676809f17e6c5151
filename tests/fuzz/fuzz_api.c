/*
 * libFuzzer harness: argument validation of every public entry point, against the fake
 * driver (two devices) and the good fake backend (GRIDSYNC_BACKEND=<its path>).
 *
 * Each input is a program: up to 64 calls, each one byte for which call and then its
 * arguments, drawn from the input (fuzz_common.h reads them):
 *   gs_reduce / gs_reduce_ex   ctx NULL (default context) or one of two contexts; in and
 *                              out NULL, inside or around the harness's device allocations,
 *                              or any 64-bit value; any n, any dtype and op (as ints);
 *                              stream NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, one of
 *                              device 0 or one of device 1; opts NULL or an options struct
 *                              of any struct_size (the buffer is exactly that long, up to
 *                              64 bytes, so AddressSanitizer sees a read past it) and any
 *                              out_dtype; the calling thread's current CUDA context none,
 *                              device 0's or device 1's;
 *   gs_context_get_info        ctx NULL or a context; info NULL or a buffer of exactly
 *                              struct_size bytes (4..256), any struct_size;
 *   gs_context_create/destroy  any device ordinal, out NULL or not;
 *   gs_status_string           any int;
 *   gs_driver_version, gs_device_count   NULL or not;
 *   gs_version, gs_version_string, gs_context_destroy(NULL), gs_last_error_message.
 *
 * Checked besides what AddressSanitizer/UBSan see: every status is a gs_status and the
 * message is a bounded string; dtypes and ops out of range are GS_ERROR_INVALID_ARGUMENT;
 * a gs_reduce that succeeds had valid enums, aligned pointers, and in/out ranges inside
 * device allocations (asked of the driver, as gridsync does); gs_context_get_info fills
 * only what fits in struct_size; contexts made and destroyed give back their primary
 * context retain; no CUDA context is left pushed on the thread.
 */
#define _GNU_SOURCE
#include <limits.h>

#include "fuzz_common.h"

#define NDTYPES 10
#define NOPS 9
#define NBUFS 5

static fuzz_driver drv;
static CUcontext primary[2];
static gs_context *contexts[2];
static CUstream streams[2]; /* a non-blocking stream of device 0, one of device 1 */
static struct {
    CUdeviceptr base;
    size_t size;
} bufs[NBUFS];

static const size_t dtype_size[NDTYPES] = {4, 4, 8, 8, 4, 8, 2, 2, 1, 1};

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_setup(&drv);
    setenv("GRIDSYNC_BACKEND", FUZZ_FAKE_DIR "/gridsync-fake_good.so", 1);
    if (drv.init(0) != CUDA_SUCCESS)
        abort();
    CUcontext popped;
    static const size_t sizes[NBUFS] = {1, 8, 256, 4096, 1u << 20};
    for (int d = 0; d < 2; d++) {
        if (drv.retain(&primary[d], d) != CUDA_SUCCESS || drv.push(primary[d]) != CUDA_SUCCESS ||
            drv.stream_create(&streams[d], CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
            abort();
        for (int b = 0; d == 0 && b < NBUFS; b++) {
            bufs[b].size = sizes[b];
            if (drv.alloc(&bufs[b].base, sizes[b]) != CUDA_SUCCESS)
                abort();
        }
        drv.pop(&popped);
        if (gs_context_create(d, &contexts[d]) != GS_SUCCESS) {
            fprintf(stderr, "gs_context_create(%d) with the fake driver and backend: %s\n", d,
                    gs_last_error_message());
            abort();
        }
    }
    return 0;
}

static void check_status(const char *call, gs_status st)
{
    fuzz_check_message();
    FUZZ_CHECK((int)st >= GS_SUCCESS && (int)st <= GS_ERROR_INTERNAL, "%s returned %d", call, (int)st);
    if (st != GS_SUCCESS)
        FUZZ_CHECK(gs_last_error_message()[0] != '\0', "%s failed (%d) without a message", call, (int)st);
}

/* NULL, an address inside or just around one of the device allocations (aligned or not),
 * or any 64-bit value. */
static uintptr_t take_pointer(fuzz_input *in)
{
    uint8_t sel = fuzz_u8(in);
    const size_t b = (sel >> 2) % NBUFS;
    switch (sel & 3) {
    case 0:
        return 0;
    case 1: /* from the start, at an offset up to 64 bytes past the end */
        return (uintptr_t)bufs[b].base + fuzz_u32(in) % (bufs[b].size + 64);
    case 2: /* a little before the end, or before the start */
        return (uintptr_t)bufs[b].base + bufs[b].size - (fuzz_u8(in) % 24) + (sel & 0x80 ? -(uintptr_t)4096 : 0);
    default:
        return (uintptr_t)fuzz_u64(in);
    }
}

static gs_context *take_context(fuzz_input *in)
{
    uint8_t sel = fuzz_u8(in) % 3;
    return sel == 0 ? NULL : contexts[sel - 1];
}

static gs_stream take_stream(fuzz_input *in)
{
    switch (fuzz_u8(in) % 5) {
    case 0: return NULL;
    case 1: return (gs_stream)CU_STREAM_LEGACY;
    case 2: return (gs_stream)CU_STREAM_PER_THREAD;
    case 3: return (gs_stream)streams[0];
    default: return (gs_stream)streams[1];
    }
}

/* Whether [p, p + bytes) lies in one allocation the driver knows: what gridsync must have
 * found before it accepted the call, asked of the driver here independently of the core. */
static int device_range(uintptr_t p, uint64_t bytes)
{
    static CUpointer_attribute attrs[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                           CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    struct {
        unsigned int type;
        CUdeviceptr start;
        size_t size;
    } range = {0, 0, 0};
    void *data[3] = {&range.type, &range.start, &range.size};
    if (drv.pointer_attributes(3, attrs, data, (CUdeviceptr)p) != CUDA_SUCCESS || range.type == 0)
        return 0;
    return p >= range.start && bytes <= range.size && p - range.start <= range.size - bytes;
}

static int default_out(int dtype, int op)
{
    return op == GS_OP_ARGMIN || op == GS_OP_ARGMAX ? GS_INT64 : dtype;
}

static int is_float(int d)
{
    return d == GS_FLOAT32 || d == GS_FLOAT64 || d == GS_FLOAT16 || d == GS_BFLOAT16;
}

static void call_reduce(fuzz_input *in, int with_options)
{
    gs_context *ctx = take_context(in);
    uintptr_t src = take_pointer(in), dst = take_pointer(in);
    uint8_t nsel = fuzz_u8(in);
    uint64_t n = nsel & 0x80 ? fuzz_u64(in) : nsel & 0x40 ? fuzz_u32(in) % 70000 : nsel & 0x3f;
    int dtype = fuzz_small_or_any(in, -1, NDTYPES);
    int op = fuzz_small_or_any(in, -1, NOPS);
    gs_stream stream = take_stream(in);
    int current = fuzz_u8(in) % 3; /* the thread's current CUDA context: none, device 0's, 1's */

    gs_reduce_options *opts = NULL;
    uint32_t struct_size = 0;
    int32_t out_dtype = GS_OUT_DEFAULT;
    size_t opts_bytes = 0;
    if (with_options && fuzz_u8(in) % 4 != 0) {
        uint8_t ssel = fuzz_u8(in);
        struct_size = ssel & 0x80 ? fuzz_u32(in) : ssel % 24;
        out_dtype = fuzz_small_or_any(in, -1, NDTYPES);
        /* Exactly as long as the caller says (and at least its first member), so a read
         * of a member past struct_size is a heap-buffer-overflow. */
        opts_bytes = struct_size < 4 ? 4 : struct_size > 64 ? 64 : struct_size;
        opts = malloc(opts_bytes);
        if (!opts)
            abort();
        memset(opts, 0xa5, opts_bytes);
        memcpy(opts, &struct_size, 4);
        if (opts_bytes >= 8)
            memcpy((char *)opts + 4, &out_dtype, 4);
    }

    CUcontext popped;
    if (current && drv.push(primary[current - 1]) != CUDA_SUCCESS)
        abort();
    gs_status st = with_options ? gs_reduce_ex(ctx, (const void *)src, n, (gs_dtype)dtype, (gs_op)op, (void *)dst,
                                               stream, opts)
                                : gs_reduce(ctx, (const void *)src, n, (gs_dtype)dtype, (gs_op)op, (void *)dst, stream);
    if (current)
        drv.pop(&popped);
    check_status("gs_reduce", st);

    if (dtype < 0 || dtype >= NDTYPES || op < 0 || op >= NOPS)
        FUZZ_CHECK(st == GS_ERROR_INVALID_ARGUMENT, "dtype %d op %d: status %d", dtype, op, (int)st);
    else if (is_float(dtype) && op >= GS_OP_BIT_AND)
        FUZZ_CHECK(st == GS_ERROR_UNSUPPORTED, "bitwise op %d over float dtype %d: status %d", op, dtype, (int)st);

    if (st == GS_SUCCESS) {
        int out = default_out(dtype, op);
        if (opts && opts_bytes >= 8 && struct_size >= 8 && out_dtype != GS_OUT_DEFAULT)
            out = out_dtype;
        FUZZ_CHECK(out >= 0 && out < NDTYPES, "success with out_dtype %d", out);
        size_t esize = dtype_size[dtype], osize = dtype_size[out];
        FUZZ_CHECK(dst != 0 && dst % osize == 0, "success with out = 0x%zx (result of %zu bytes)", (size_t)dst, osize);
        FUZZ_CHECK(src % esize == 0, "success with in = 0x%zx misaligned for %zu-byte elements", (size_t)src, esize);
        FUZZ_CHECK(device_range(dst, osize), "success with out = 0x%zx outside device memory", (size_t)dst);
        if (n) {
            FUZZ_CHECK(n <= UINT64_MAX / esize && device_range(src, n * esize),
                       "success with in = 0x%zx, n = %llu x %zu bytes outside device memory", (size_t)src,
                       (unsigned long long)n, esize);
        }
    }
    free(opts);
}

static void call_get_info(fuzz_input *in)
{
    gs_context *ctx = take_context(in);
    uint8_t ssel = fuzz_u8(in);
    int null_info = (ssel & 0xc0) == 0xc0;
    uint32_t struct_size = ssel & 0x80 ? fuzz_u32(in) : ssel % 80;
    size_t bytes = struct_size < 4 ? 4 : struct_size > 256 ? 256 : struct_size;
    unsigned char *buf = malloc(bytes);
    if (!buf)
        abort();
    memset(buf, 0xa5, bytes);
    memcpy(buf, &struct_size, 4);
    gs_context_info *info = null_info ? NULL : (gs_context_info *)(void *)buf;
    gs_status st = gs_context_get_info(ctx, info);
    check_status("gs_context_get_info", st);
    if (!ctx || !info) {
        FUZZ_CHECK(st == GS_ERROR_INVALID_ARGUMENT, "gs_context_get_info(%p, %p): %d", (void *)ctx, (void *)info,
                   (int)st);
    } else if (struct_size >= offsetof(gs_context_info, device) + sizeof(int32_t)) {
        FUZZ_CHECK(st == GS_SUCCESS, "gs_context_get_info with struct_size %u: %d", struct_size, (int)st);
        uint32_t got;
        memcpy(&got, buf, 4);
        FUZZ_CHECK(got == struct_size, "struct_size changed from %u to %u", struct_size, got);
        /* Every pointer member that fits is a string. */
        static const size_t strings[] = {offsetof(gs_context_info, device_name),
                                         offsetof(gs_context_info, backend_name),
                                         offsetof(gs_context_info, backend_path),
                                         offsetof(gs_context_info, selection_log)};
        for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
            if (strings[i] + sizeof(char *) <= bytes && strings[i] + sizeof(char *) <= struct_size) {
                const char *s;
                memcpy(&s, buf + strings[i], sizeof s);
                FUZZ_CHECK(s != NULL && strlen(s) < 65536, "a string member at offset %zu", strings[i]);
            }
    } else {
        FUZZ_CHECK(st == GS_ERROR_INVALID_ARGUMENT, "gs_context_get_info with struct_size %u: %d", struct_size,
                   (int)st);
    }
    free(buf);
}

static void call_create_destroy(fuzz_input *in)
{
    int device = fuzz_small_or_any(in, -2, 3);
    int null_out = fuzz_u8(in) % 8 == 0;
    long before = drv.live("primary");
    gs_context *ctx = (gs_context *)(uintptr_t)0x1;
    gs_status st = gs_context_create(device, null_out ? NULL : &ctx);
    check_status("gs_context_create", st);
    if (null_out) {
        FUZZ_CHECK(st == GS_ERROR_INVALID_ARGUMENT, "gs_context_create(%d, NULL): %d", device, (int)st);
    } else if (device == 0 || device == 1) {
        FUZZ_CHECK(st == GS_SUCCESS && ctx, "gs_context_create(%d): %d", device, (int)st);
    } else {
        FUZZ_CHECK(st == GS_ERROR_NO_DEVICE && ctx == NULL, "gs_context_create(%d): %d, ctx %p", device, (int)st,
                   (void *)ctx);
    }
    if (st == GS_SUCCESS)
        FUZZ_CHECK(gs_context_destroy(ctx) == GS_SUCCESS, "gs_context_destroy");
    FUZZ_CHECK(drv.live("primary") == before, "primary retains %ld after create+destroy, %ld before",
               drv.live("primary"), before);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = {data, size};
    for (int calls = 0; in.n && calls < 64; calls++) {
        switch (fuzz_u8(&in) % 8) {
        case 0:
            call_reduce(&in, 0);
            break;
        case 1:
            call_reduce(&in, 1);
            break;
        case 2:
            call_get_info(&in);
            break;
        case 3: {
            int s = (int)fuzz_u32(&in);
            const char *str = gs_status_string((gs_status)s);
            FUZZ_CHECK(str && str[0], "gs_status_string(%d)", s);
            if (s >= GS_SUCCESS && s <= GS_ERROR_INTERNAL)
                FUZZ_CHECK(strncmp(str, "GS_", 3) == 0, "gs_status_string(%d) = \"%s\"", s, str);
            else
                FUZZ_CHECK(strcmp(str, "unknown gridsync status") == 0, "gs_status_string(%d) = \"%s\"", s, str);
            break;
        }
        case 4:
            call_create_destroy(&in);
            break;
        case 5: {
            int null_arg = fuzz_u8(&in) & 1, v = -1;
            gs_status st = gs_driver_version(null_arg ? NULL : &v);
            check_status("gs_driver_version", st);
            FUZZ_CHECK(null_arg ? st == GS_ERROR_INVALID_ARGUMENT : st == GS_SUCCESS && v == 13000,
                       "gs_driver_version: %d, %d", (int)st, v);
            st = gs_device_count(null_arg ? NULL : &v);
            check_status("gs_device_count", st);
            FUZZ_CHECK(null_arg ? st == GS_ERROR_INVALID_ARGUMENT : st == GS_SUCCESS && v == 2,
                       "gs_device_count: %d, %d", (int)st, v);
            break;
        }
        case 6:
            FUZZ_CHECK(gs_context_destroy(NULL) == GS_SUCCESS, "gs_context_destroy(NULL)");
            FUZZ_CHECK(gs_version() == GS_VERSION, "gs_version");
            FUZZ_CHECK(gs_version_string() && gs_version_string()[0], "gs_version_string");
            break;
        default:
            fuzz_check_message();
            break;
        }
        FUZZ_CHECK(drv.live("stack") == 0, "%ld CUDA contexts left pushed on the thread", drv.live("stack"));
    }
    return 0;
}
