/*
 * A minimal, dlopen-based view of the CUDA driver for gridsync's own programs (the
 * `gridsync` command and the gpu tests). They act as applications would: allocate device
 * memory, copy, time with events. Loading the driver with dlopen keeps them free of any
 * link-time CUDA dependency, like the library, so they build and run (and report "no
 * driver") on machines without CUDA.
 */
#ifndef GS_CUDASHIM_H
#define GS_CUDASHIM_H

#include <stddef.h>
#include <stdint.h>

typedef enum cushim_status {
    CUSHIM_OK = 0,
    CUSHIM_NO_DRIVER = 1, /* no libcuda.so.1, or cuInit failed for lack of a driver */
    CUSHIM_NO_DEVICE = 2, /* driver present, no device (or the ordinal is out of range) */
    CUSHIM_ERROR = 3      /* any other CUDA failure; cushim_error() says which */
} cushim_status;

typedef uint64_t cushim_ptr; /* a device pointer (CUdeviceptr) */
typedef void *cushim_stream; /* a CUstream; NULL is the legacy default stream */
typedef void *cushim_event;

/* Loads the driver, calls cuInit, retains device `ordinal`'s primary context and makes it
 * current on the calling thread (as cudaSetDevice does). Safe to call again (on another
 * thread, to make the context current there). */
cushim_status cushim_init(int ordinal);
/* Any other driver entry point, by its exported name (e.g. "cuGraphLaunch"), for tests that
 * need more than this file wraps; NULL before a successful cushim_init or if absent. */
void *cushim_driver_symbol(const char *name);
/* The last failure's message (thread-local). */
const char *cushim_error(void);

/* Each returns 0 on success, -1 with cushim_error() set on failure. */
int cushim_device_count(int *count);
int cushim_device_name(int ordinal, char *name, size_t len);
int cushim_device_memory(size_t *free_bytes, size_t *total_bytes);
int cushim_alloc(cushim_ptr *p, size_t bytes);
int cushim_free(cushim_ptr p);
/* cushim_h2d and cushim_memset8 return once the device memory holds the bytes. */
int cushim_h2d(cushim_ptr dst, const void *src, size_t bytes);
int cushim_d2h(void *dst, cushim_ptr src, size_t bytes);
int cushim_memset8(cushim_ptr dst, unsigned char value, size_t bytes);
int cushim_stream_create(cushim_stream *s);
int cushim_stream_destroy(cushim_stream s);
int cushim_stream_sync(cushim_stream s);
int cushim_ctx_sync(void);
int cushim_event_create(cushim_event *e);
int cushim_event_destroy(cushim_event e);
int cushim_event_record(cushim_event e, cushim_stream s);
int cushim_event_elapsed_ms(float *ms, cushim_event start, cushim_event end);

#endif
