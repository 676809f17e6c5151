/*
 * gridsync — single-launch grid-wide reductions for CUDA applications.
 *
 * Public host API. C99 and C++; needs no CUDA header. Every entry point returns a
 * gs_status (0 is success). After a failure, gs_last_error_message() returns a
 * thread-local sentence that says what exactly failed (argument, file, CUDA error).
 *
 * Stability: the numeric values of every enumerator below are fixed forever; new ones
 * are only appended. Functions are versioned by the linker (GRIDSYNC_1.0, ...); see
 * docs/ABI.md.
 */
#ifndef GRIDSYNC_H
#define GRIDSYNC_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#  define GS_API
#elif defined(GS_BUILDING_LIBRARY)
#  define GS_API __attribute__((visibility("default")))
#else
#  define GS_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define GS_VERSION_MAJOR 0
#define GS_VERSION_MINOR 4
#define GS_VERSION_PATCH 0
/* Encoded as (major << 16) | (minor << 8) | patch, as gs_version() returns it. */
#define GS_VERSION_ENCODE(maj, min, pat) (((uint32_t)(maj) << 16) | ((uint32_t)(min) << 8) | (uint32_t)(pat))
#define GS_VERSION GS_VERSION_ENCODE(GS_VERSION_MAJOR, GS_VERSION_MINOR, GS_VERSION_PATCH)

/*
 * CUDA streams. Both the runtime's cudaStream_t and the driver's CUstream are pointers
 * to this incomplete type, so either passes without a cast. NULL is the legacy default
 * stream (as in the driver API); cudaStreamPerThread ((gs_stream)0x2) is the calling
 * thread's per-thread default stream.
 */
struct CUstream_st;
typedef struct CUstream_st *gs_stream;

typedef enum gs_status {
    GS_SUCCESS = 0,
    GS_ERROR_INVALID_ARGUMENT = 1,     /* a NULL pointer, an enum value out of range, ... */
    GS_ERROR_UNSUPPORTED = 2,          /* a valid dtype/op pair this version does not do */
    GS_ERROR_NO_DRIVER = 3,            /* libcuda.so.1 missing or unusable */
    GS_ERROR_NO_DEVICE = 4,            /* no CUDA device, or the ordinal is out of range */
    GS_ERROR_BACKEND_NOT_FOUND = 5,    /* no backend file could be found/opened */
    GS_ERROR_BACKEND_ABI_MISMATCH = 6, /* backend built for another backend ABI major */
    GS_ERROR_BACKEND_INCOMPLETE = 7,   /* backend misses a required entry or function */
    GS_ERROR_BACKEND_INIT_FAILED = 8,  /* backend entry point or device setup failed */
    GS_ERROR_NO_KERNEL_IMAGE = 9,      /* backend has no code that runs on this device */
    GS_ERROR_OUT_OF_MEMORY = 10,       /* host or device allocation failed */
    GS_ERROR_CUDA = 11,                /* a CUDA driver call failed; the message names it */
    GS_ERROR_INVALID_POINTER = 12,     /* a pointer the device cannot access */
    GS_ERROR_INVALID_CONTEXT = 13,     /* a stream of another CUDA context, a default context passed to destroy */
    GS_ERROR_INTERNAL = 14             /* a bug in gridsync; please report it */
} gs_status;

typedef enum gs_dtype {
    GS_INT32 = 0,
    GS_UINT32 = 1,
    GS_INT64 = 2,
    GS_UINT64 = 3,
    GS_FLOAT32 = 4,
    GS_FLOAT64 = 5,
    GS_FLOAT16 = 6,
    GS_BFLOAT16 = 7,
    GS_INT8 = 8,
    GS_UINT8 = 9
} gs_dtype;

typedef enum gs_op {
    GS_OP_SUM = 0,
    GS_OP_PROD = 1,
    GS_OP_MIN = 2,
    GS_OP_MAX = 3,
    GS_OP_ARGMIN = 4,
    GS_OP_ARGMAX = 5,
    GS_OP_BIT_AND = 6,
    GS_OP_BIT_OR = 7,
    GS_OP_BIT_XOR = 8
} gs_op;

/* A gridsync context: one CUDA context (a device's primary context by default) and the
 * backend loaded for it. Opaque; safe to use from several threads at once. */
typedef struct gs_context gs_context;

/* Library version, GS_VERSION_ENCODE(major, minor, patch) of the loaded library. */
GS_API uint32_t gs_version(void);
/* The same as "major.minor.patch". Static storage. */
GS_API const char *gs_version_string(void);

/* A short English name for a status ("GS_ERROR_NO_DRIVER: no usable CUDA driver"). Never NULL;
 * unknown values give "unknown gridsync status". Static storage. */
GS_API const char *gs_status_string(gs_status status);

/* The detail message of the last failing gridsync call on this thread ("" if none).
 * Valid until the next gridsync call on this thread. */
GS_API const char *gs_last_error_message(void);

/* CUDA driver version (e.g. 13000), loading the driver if needed. */
GS_API gs_status gs_driver_version(int *version);

/* Number of CUDA devices. */
GS_API gs_status gs_device_count(int *count);

/*
 * Creates a context for CUDA device `device` (an ordinal, as in cudaSetDevice). It uses
 * the device's primary context, the one the CUDA runtime uses, so pointers from
 * cudaMalloc and streams from cudaStreamCreate on that device work with it. The backend
 * is chosen here (GRIDSYNC_BACKEND, GRIDSYNC_BACKEND_PATH, GRIDSYNC_DEBUG: see docs/ABI.md).
 */
GS_API gs_status gs_context_create(int device, gs_context **ctx);

/*
 * Destroys a context and frees its device workspaces. The caller must make sure work that
 * gridsync queued with this context has finished (e.g. cudaStreamSynchronize) and that no
 * other thread uses it. NULL is accepted and does nothing.
 */
GS_API gs_status gs_context_destroy(gs_context *ctx);

/* What a context runs on. Fill struct_size with sizeof(gs_context_info) before the call;
 * fields the library does not know of stay untouched. Strings live as long as ctx. */
typedef struct gs_context_info {
    uint32_t struct_size;
    int32_t device;              /* CUDA device ordinal */
    int32_t cc_major;            /* compute capability */
    int32_t cc_minor;
    int32_t multiprocessor_count;
    const char *device_name;
    const char *backend_name;    /* e.g. "cuda_sm20" */
    const char *backend_path;    /* the file it was loaded from */
    const char *selection_log;   /* one line per backend tried, and why it was (not) chosen */
} gs_context_info;

GS_API gs_status gs_context_get_info(const gs_context *ctx, gs_context_info *info);

/*
 * Reduces n elements of type dtype at `in` (device-accessible memory) with `op` and writes
 * one result to `out` (device-accessible memory), in ONE kernel launch queued on `stream`.
 * Returns as soon as the launch is queued: read *out after synchronizing the stream. (The
 * first call on a stream, and each first call on a stream within one graph capture,
 * also allocates and zero-fills that stream's 64 KiB workspace, waiting for the fill.)
 * Capturing the call into a CUDA graph records one kernel node; docs/semantics.md §9.
 *
 * ctx NULL: the default context of the calling thread's current CUDA context (or device
 * 0's primary context if the thread has none), created on first use.
 *
 * in must be aligned to its element size, out to its result's; both must be memory the
 * device can access (device, managed, or mapped pinned host memory): memory the driver
 * does not know (pageable host memory, a freed pointer) is GS_ERROR_INVALID_POINTER; a
 * misaligned pointer, or a range that runs past the end of its allocation,
 * GS_ERROR_INVALID_ARGUMENT. (Which device owns the memory is not checked.)
 *
 * Semantics (docs/semantics.md has the full table):
 *  - output: of type dtype for SUM/PROD/MIN/MAX/BIT_*, an int64 index for ARGMIN/ARGMAX
 *    (gs_reduce_ex can ask for wider outputs);
 *  - accumulation: in the input type, except float16/bfloat16 (in float32, rounded once
 *    at the end) and 8-bit integers (in 32 bits, wrapped to 8 at the end);
 *  - n == 0 writes the identity: SUM 0, PROD 1, MIN +inf (integers: the type's max),
 *    MAX -inf (the type's min), AND all ones, OR/XOR 0, ARGMIN/ARGMAX -1;
 *  - integer SUM and PROD wrap (two's complement);
 *  - MIN/MAX propagate NaN; ARGMIN/ARGMAX return the index of the first NaN if there
 *    is one, else of the first minimum (maximum): ties go to the lowest index;
 *  - bitwise ops exist for integer types only (GS_ERROR_UNSUPPORTED for floats);
 *  - results are run-to-run deterministic, bit for bit, for a given device, backend, n,
 *    input and address of `in` modulo 16, also while other streams are busy.
 */
GS_API gs_status gs_reduce(gs_context *ctx, const void *in, uint64_t n, gs_dtype dtype, gs_op op,
                           void *out, gs_stream stream);

/* Output type selector for gs_reduce_options.out_dtype: gs_reduce's default. */
#define GS_OUT_DEFAULT (-1)

/*
 * Options of gs_reduce_ex. Zero-initialise, set struct_size = sizeof(gs_reduce_options)
 * and out_dtype (GS_OUT_DEFAULT for the default: 0 is GS_INT32), then the fields you
 * want; members are only ever appended, and the library reads only those that fit in
 * struct_size, so a program built against an older header keeps working.
 */
typedef struct gs_reduce_options {
    uint32_t struct_size;
    /* A gs_dtype for the result, or GS_OUT_DEFAULT. Beyond the default, these are offered:
     *   SUM, PROD over int8/int32 -> GS_INT64, over uint8/uint32 -> GS_UINT64
     *     (accumulated in 64 bits, as torch.sum does);
     *   SUM, PROD over float32 -> GS_FLOAT64 (accumulated in float64);
     *   SUM, PROD, MIN, MAX over float16/bfloat16 -> GS_FLOAT32 (no final rounding).
     * Anything else returns GS_ERROR_UNSUPPORTED. */
    int32_t out_dtype;
    /* ---- appended in GRIDSYNC_1.2 (read only when struct_size covers it) ---- */
    /* GS_REDUCE_EXACT, GS_REDUCE_EXACT_ACCUMULATOR (below); 0 for the default. */
    uint32_t flags;
} gs_reduce_options;

/* gs_reduce with options; opts NULL is the same as gs_reduce. */
GS_API gs_status gs_reduce_ex(gs_context *ctx, const void *in, uint64_t n, gs_dtype dtype, gs_op op, void *out,
                              gs_stream stream, const gs_reduce_options *opts);

/* ---- added in GRIDSYNC_1.1 (gridsync 0.2) ---------------------------------------------- */

/* gs_segmented_reduce flags. */
#define GS_SEGMENTED_CHECK_OFFSETS 1u /* validate the offsets first: a host synchronisation */
/* each segment's float SUM correctly rounded (docs/semantics.md §12; since gridsync 0.3) */
#define GS_SEGMENTED_EXACT 2u

/*
 * Reduces each of num_segments segments of the n elements at `in` with `op`, in ONE kernel
 * launch queued on `stream`: segment j is in[offsets[j] .. offsets[j+1]), its result goes
 * to out[j]. offsets: num_segments + 1 int64 values in device-accessible memory, as CUB's
 * DeviceSegmentedReduce takes them (segments may be empty and need not start at 0, nor
 * cover all of in). out: num_segments results, of gs_reduce's default output type (dtype,
 * or int64 for ARGMIN/ARGMAX, where the index counts from the segment's first element).
 * Every dtype x op that gs_reduce offers with its default output, with the same rules
 * (docs/semantics.md); an empty segment gets the identity (-1 for ARGMIN/ARGMAX). Results
 * are run-to-run deterministic, bit for bit, for a given device, backend, n, offsets,
 * input, and address of `in` modulo 16.
 *
 * The work is cut into chunks of the input that blocks take from a global work queue, so
 * one huge segment and a million tiny ones finish in balance (docs/work-queue.md).
 *
 * Checked on every call, as in gs_reduce: the enums, NULL pointers (in may be NULL when n
 * is 0; offsets and out when num_segments is 0, which queues nothing and succeeds), the
 * alignment of in, offsets (8 bytes) and out, and that each of in[0, n), offsets[0,
 * num_segments] and out[0, num_segments) is device-accessible memory inside one allocation.
 * The offsets' values live in device memory and are NOT checked by default: offsets
 * outside [0, n] are clamped to it and a segment whose end is below its begin is empty,
 * so bad offsets never make gridsync read or write out of bounds, crash or hang, but
 * their results are unspecified. flags GS_SEGMENTED_CHECK_OFFSETS checks them first
 * (offsets[0] >= 0, non-decreasing, offsets[num_segments] <= n) and returns
 * GS_ERROR_INVALID_ARGUMENT naming the first bad one; that costs a synchronisation of
 * `stream`, a copy of the offsets to the host and a scan of them, and is refused
 * (GS_ERROR_INVALID_ARGUMENT) while the stream is being captured into a graph.
 *
 * flags GS_SEGMENTED_EXACT (gridsync 0.3; flags may combine): each segment's SUM of
 * float16, bfloat16, float32 or float64 is its exact sum rounded once to dtype, as
 * gs_reduce_ex's GS_REDUCE_EXACT rounds one (docs/semantics.md §12): the same bits on any
 * GPU, backend and alignment; an empty segment gives +0.0. Any other op or dtype:
 * GS_ERROR_UNSUPPORTED, as from a backend older than 0.3.
 */
GS_API gs_status gs_segmented_reduce(gs_context *ctx, const void *in, uint64_t n, gs_dtype dtype, gs_op op,
                                     const int64_t *offsets, uint64_t num_segments, void *out,
                                     gs_stream stream, uint32_t flags);

/* ---- Added in GRIDSYNC_1.1: the work queue's device memory -----------------------------
 *
 * The device side of the global work queue is in gridsync_device.cuh (gs_work_queue,
 * gs_queue_fetch, gs_queue_finish; docs/work-queue.md). These functions make, re-zero and
 * free the queue's memory from host code, which needs no CUDA header. A queue is
 * GS_QUEUE_BYTES of device memory that is all zero before a launch; a launch that follows
 * the contract (every block calls gs_queue_finish once) leaves it all zero again, so
 * launches ordered one after another on one stream share a queue without any reset.
 */

/* The size of a queue in bytes: GS_WORK_QUEUE_BYTES of gridsync_device.cuh. */
#define GS_QUEUE_BYTES 16

/*
 * Allocates a queue (GS_QUEUE_BYTES of device memory, 8-byte aligned) in ctx's CUDA
 * context, zero-fills it and waits for the fill, so the queue is ready for a launch on any
 * stream when the call returns. *queue gets the device pointer (pass it to your kernel as a
 * gs_work_queue *), or NULL on failure. ctx NULL: the default context, as in gs_reduce.
 * Like a cudaMalloc it is not meant for a loop or a hot path; it may be called while another
 * stream is being captured into a graph (it does not join the capture).
 * GS_ERROR_INVALID_ARGUMENT: queue is NULL; GS_ERROR_OUT_OF_MEMORY: no device memory.
 */
GS_API gs_status gs_queue_create(gs_context *ctx, void **queue);

/*
 * Zero-fills the queue at `queue`, ordered on `stream` (one memset of GS_QUEUE_BYTES queued
 * on it; nothing waits). Returns as soon as it is queued. Captured into a CUDA graph it is a
 * memset node. Only needed to recover after a launch that did not follow the contract to
 * the end (a block returned without gs_queue_finish, a kernel was aborted) -- never between
 * launches that did. Queue it before the next launch that uses the queue, on that launch's
 * stream (or order the two otherwise). ctx NULL: the default context, as in gs_reduce.
 * queue may also be memory you allocated yourself (GS_QUEUE_BYTES, 8-byte aligned, any
 * memory the device can access). Which device owns the memory is not checked.
 * GS_ERROR_INVALID_ARGUMENT: queue is NULL or not 8-byte aligned, or its GS_QUEUE_BYTES run
 * past the end of its allocation; GS_ERROR_INVALID_POINTER: queue is not memory the device
 * can access (pageable host memory, a freed pointer); GS_ERROR_INVALID_CONTEXT: stream
 * belongs to another CUDA context than ctx's (checked when the stream is not capturing).
 */
GS_API gs_status gs_queue_reset(gs_context *ctx, void *queue, gs_stream stream);

/*
 * Frees a queue made by gs_queue_create (with the same ctx, or NULL for both). Work that
 * uses the queue must have finished (as for cudaFree). Destroy queues before the context
 * they were made in. NULL is accepted and does nothing.
 * GS_ERROR_INVALID_POINTER: queue is not the start of a device allocation.
 */
GS_API gs_status gs_queue_destroy(gs_context *ctx, void *queue);

/* ---- added in GRIDSYNC_1.2: correctly rounded float sums -------------------------------
 *
 * docs/semantics.md §12 has the rules. gs_reduce_options.flags:
 *
 * GS_REDUCE_EXACT: a float SUM (float16, bfloat16, float32, float64; outputs as in the
 *   table of gs_reduce_options, i.e. the input type, or float16/bfloat16 -> float32,
 *   float32 -> float64) is the exact mathematical sum of the elements rounded once, to
 *   nearest-even, to the output type: the same bits on every backend, grid size, GPU,
 *   alignment and order of the data. A NaN element, or +inf and -inf together, give NaN;
 *   infinities of one sign give that infinity; a finite exact sum that rounds beyond the
 *   type's range gives +-inf; an exact sum of 0 is -0.0 when every element is -0.0 (n >= 1)
 *   and +0.0 otherwise. Any other op or dtype with this flag: GS_ERROR_UNSUPPORTED.
 * GS_REDUCE_EXACT_ACCUMULATOR: the same sums, but `out` receives the gs_exact_acc of the
 *   elements (8-byte aligned, sizeof(gs_exact_acc) bytes) instead of the rounded result;
 *   out_dtype is checked as for GS_REDUCE_EXACT and does not change the accumulator.
 */
#define GS_REDUCE_EXACT 1u
#define GS_REDUCE_EXACT_ACCUMULATOR 2u

/*
 * The exact accumulator: one fixed-point number of GS_EXACT_LIMBS signed 64-bit limbs, and
 * counts. Its value is
 *     sum over i of limb[i] * 2^(GS_EXACT_LIMB_BITS * i + GS_EXACT_LOW_EXPONENT),
 * exactly, for any int64 limbs: 2^-1088 .. 2^1088 in 32-bit digits, which holds every
 * float64 (subnormals included: 2^-1074 is a multiple of 2^-1088) and the sum of up to
 * 2^63 of them. Every member is an int64 that adds: the accumulator of the union of two
 * inputs is the member-wise int64 sum of theirs. So accumulators of shards combine with
 * a plain int64 sum of GS_EXACT_ACC_WORDS words (an NCCL or MPI all-reduce of int64), or
 * with gs_exact_combine, and gs_exact_round of the total gives the bits one call over all
 * the data gives.
 *
 * Normalised (what gridsync writes): limb[0 .. GS_EXACT_LIMBS-2] in [0, 2^32) and the
 * value's sign and the rest in limb[GS_EXACT_LIMBS-1] (|limb| < 2^31 for any sum of fewer
 * than 2^63 float elements), so the int64 sum of up to 2^30 normalised accumulators
 * cannot overflow; gs_exact_combine normalises again, for any number of combines.
 */
#define GS_EXACT_LIMBS 68
#define GS_EXACT_LIMB_BITS 32
#define GS_EXACT_LOW_EXPONENT (-1088)
#define GS_EXACT_ACC_WORDS 76
typedef struct gs_exact_acc {
    int64_t limb[GS_EXACT_LIMBS];
    int64_t count;      /* elements */
    int64_t nan;        /* NaN elements */
    int64_t pos_inf;    /* +inf elements */
    int64_t neg_inf;    /* -inf elements */
    int64_t sign_clear; /* > 0: some element has its sign bit clear (gridsync writes 0 or 1);
                           decides the sign of a zero sum: -0.0 needs count > 0, sign_clear == 0 */
    int64_t reserved[3]; /* written as 0, ignored when read */
} gs_exact_acc;

/*
 * The correctly rounded sum an accumulator stands for, as gs_reduce with GS_REDUCE_EXACT
 * would write it: out_dtype GS_FLOAT16, GS_BFLOAT16, GS_FLOAT32 or GS_FLOAT64; *result
 * (host memory, 2, 2, 4 or 8 bytes) gets the value. Any int64 limbs are accepted (the
 * value above); counts are read as "> 0 or not". Host only: needs no driver or device.
 * GS_ERROR_INVALID_ARGUMENT: acc or result NULL, or out_dtype not a float type.
 */
GS_API gs_status gs_exact_round(const gs_exact_acc *acc, gs_dtype out_dtype, void *result);

/*
 * acc += other (member-wise), then acc normalised: the accumulator of both inputs. Host
 * only. GS_ERROR_INVALID_ARGUMENT: a NULL pointer, or a sum that leaves int64 (limbs that
 * were far from normalised, or counts beyond 2^63); acc is then unchanged.
 */
GS_API gs_status gs_exact_combine(gs_exact_acc *acc, const gs_exact_acc *other);

/* ---- added in GRIDSYNC_1.3 (gridsync 0.4): scans ------------------------------------- */

/* gs_scan_options.flags. */
#define GS_SCAN_EXCLUSIVE 1u /* out[0] is the op's identity, out[i] = in[0] op ... op in[i-1] */
/*
 * GS_SCAN_EXACT: correctly rounded prefix sums (docs/semantics.md §12 and §13). op GS_OP_SUM
 * over GS_FLOAT16, GS_BFLOAT16, GS_FLOAT32 or GS_FLOAT64, results of the input's type or the
 * wider ones of gs_scan_options.out_dtype (float16/bfloat16 -> float32, float32 -> float64);
 * anything else: GS_ERROR_UNSUPPORTED. out[i] is the exact sum of carry-in + in[0] + ... +
 * in[i] (exclusive: up to in[i-1]) rounded once, to nearest-even, with §12's rules for NaN,
 * infinities, overflow and the sign of a zero (an empty prefix with no carry-in is +0.0).
 * The same bits on every GPU, backend, grid, alignment and sharding.
 */
#define GS_SCAN_EXACT 2u

/*
 * Options of gs_scan, as gs_reduce_options: zero-initialise, set struct_size =
 * sizeof(gs_scan_options) and out_dtype (GS_OUT_DEFAULT for the default: 0 is GS_INT32);
 * members are only ever appended, and the library reads only those that fit in
 * struct_size (at least out_dtype's end: 8).
 */
typedef struct gs_scan_options {
    uint32_t struct_size;
    /* A gs_dtype for the results, or GS_OUT_DEFAULT (dtype). The same wider outputs as
     * gs_reduce_options: SUM, PROD over int8/int32 -> GS_INT64, over uint8/uint32 ->
     * GS_UINT64; SUM, PROD over float32 -> GS_FLOAT64; SUM, PROD, MIN, MAX over
     * float16/bfloat16 -> GS_FLOAT32. Anything else returns GS_ERROR_UNSUPPORTED. */
    int32_t out_dtype;
    /* GS_SCAN_EXCLUSIVE and GS_SCAN_EXACT, or 0 (inclusive). Other bits are reserved:
     * GS_ERROR_INVALID_ARGUMENT. */
    uint32_t flags;
    /* GS_SCAN_EXACT only (else both must be NULL: GS_ERROR_INVALID_ARGUMENT). carry_in: the
     * scan starts from the exact sum of the carry_in_count accumulators carry_in[0 ..
     * carry_in_count) (device memory, 8-byte aligned, as gs_exact_round_device reads them:
     * the total of everything before this shard, e.g. the all-gathered accumulators of the
     * earlier ranks), as if their elements came before in[0]; NULL with carry_in_count 0:
     * none. total: when not NULL, receives (device memory, 8-byte aligned) the normalised
     * gs_exact_acc of in[0 .. n) alone, the accumulator gs_reduce_ex with
     * GS_REDUCE_EXACT_ACCUMULATOR writes, except that nan, pos_inf and neg_inf are 0 or 1
     * (whether any); written for n == 0 too. Neither may overlap in, out or each other. */
    const gs_exact_acc *carry_in;
    uint64_t carry_in_count;
    gs_exact_acc *total;
} gs_scan_options;

/*
 * Scans the n elements of type dtype at `in` with `op` into the n results at `out` (both
 * device-accessible memory), in ONE kernel launch queued on `stream`, with no temporary
 * storage from the caller and no host synchronisation (the stream's workspace as in
 * gs_reduce); capturing the call into a CUDA graph records one kernel node. With
 * GS_SCAN_EXACT, a range pass and one scan per width of the fixed point are queued instead
 * (docs/design.md, "The exact scan"): still no host synchronisation, and the same kernel
 * nodes for every input. Returns as soon as the launches are queued. ctx NULL: the default context, as in gs_reduce. opts NULL: the
 * defaults (inclusive, results of type dtype).
 *
 * Inclusive by default: out[i] = in[0] op in[1] op ... op in[i]. GS_SCAN_EXCLUSIVE:
 * out[0] is the op's identity (gs_reduce's n == 0 result) and out[i] = in[0] op ... op
 * in[i-1]. Semantics (docs/semantics.md, "Scans"):
 *  - ops: SUM, PROD, MIN, MAX for every dtype; BIT_AND, BIT_OR, BIT_XOR for integer
 *    dtypes (floats: GS_ERROR_UNSUPPORTED); ARGMIN/ARGMAX have no scan
 *    (GS_ERROR_UNSUPPORTED);
 *  - outputs: dtype, or the wider types of gs_scan_options.out_dtype;
 *  - float16/bfloat16 are carried in float32 and each result is rounded to the output
 *    type; MIN/MAX propagate NaN; integer SUM and PROD wrap (two's complement);
 *  - float results are the same bits on every GPU, backend, grid and alignment of `in`:
 *    the association order depends on n alone;
 *  - GS_SCAN_EXACT: correctly rounded float SUMs, optionally starting from carry_in and
 *    writing the accumulator of in[0, n) to total (gs_scan_options); a backend that does
 *    not offer them for the types: GS_ERROR_UNSUPPORTED.
 *
 * in == out scans in place when the results have the input's type; any other overlap of
 * in[0, n), out[0, n), carry_in[0, carry_in_count) and total (in place into a wider type
 * included) is GS_ERROR_INVALID_ARGUMENT. in must be aligned to its element size, out to
 * its result's; memory the device cannot access is GS_ERROR_INVALID_POINTER, a range past
 * the end of its allocation GS_ERROR_INVALID_ARGUMENT, as in gs_reduce. n == 0 queues
 * nothing and succeeds once dtype, op and opts are checked (in and out may be NULL then; the
 * context is not looked at), except with GS_SCAN_EXACT and a total: then its launches write
 * the empty accumulator to total (which never includes carry_in), and every check of a
 * launch applies but those of in and out. A backend older than gridsync 0.4 has no scan:
 * GS_ERROR_UNSUPPORTED, naming it.
 */
GS_API gs_status gs_scan(gs_context *ctx, const void *in, uint64_t n, gs_dtype dtype, gs_op op, void *out,
                         gs_stream stream, const gs_scan_options *opts);

/*
 * gs_exact_round on the device: rounds the count accumulators acc[0 .. count) to the count
 * results out[0 .. count) of out_dtype (GS_FLOAT16, GS_BFLOAT16, GS_FLOAT32 or GS_FLOAT64),
 * in ONE kernel launch queued on `stream`: no host synchronisation and no workspace, so it
 * can be captured into a CUDA graph, and it can follow on the same stream whatever wrote the
 * accumulators (gs_reduce_ex with GS_REDUCE_EXACT_ACCUMULATOR, an NCCL all-reduce of their
 * GS_EXACT_ACC_WORDS int64 words). out[i] has the bits gs_exact_round gives for acc[i] (the
 * same code: any int64 limbs, counts read as "> 0 or not"). ctx NULL: the default context.
 *
 * acc (8-byte aligned) and out (aligned to its result's size) are memory the device can
 * access. count == 0 queues nothing and succeeds once out_dtype is checked (acc and out may
 * be NULL then; the context is not looked at).
 * GS_ERROR_INVALID_ARGUMENT: acc or out NULL, misaligned, overlapping each other, or past
 * the end of their allocation; out_dtype not a float type; count so large that a range's
 * bytes overflow.
 * GS_ERROR_INVALID_POINTER: memory the device cannot access. GS_ERROR_INVALID_CONTEXT:
 * stream belongs to another CUDA context (checked when the stream is not capturing).
 * GS_ERROR_UNSUPPORTED: a backend older than gridsync 0.4 (no exact_round), naming it.
 */
GS_API gs_status gs_exact_round_device(gs_context *ctx, const gs_exact_acc *acc, uint64_t count, gs_dtype out_dtype,
                                       void *out, gs_stream stream);

#ifdef __cplusplus
}
#endif

#endif /* GRIDSYNC_H */
