/*
 * The gridsync command's shared declarations (cli.c, output.c, input.c, timing.c,
 * backends.c) and its commands (info.c, reduce.c, segmented.c, scan.c, selftest.c),
 * dispatched from main.c.
 */
#ifndef GS_TOOL_CLI_H
#define GS_TOOL_CLI_H

#include <stdint.h>

#include "cudashim.h"
#include "dtype.h"
#include "gridsync.h"
#include "exact_ref.h"
#include "hostref.h"

enum {
    EXIT_OK = 0,
    EXIT_FAIL = 1,      /* a wrong result, or a gridsync or CUDA error */
    EXIT_USAGE = 2,     /* bad command line */
    EXIT_NO_DRIVER = 3, /* no usable CUDA driver (libcuda.so.1) */
    EXIT_NO_DEVICE = 4  /* no CUDA device, or the --device ordinal does not exist */
};

/* ---- output (output.c) ---- */
extern int g_json; /* --json: one JSON object on stdout instead of lines */
/* A line for people (nothing with --json). */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "gridsync: MESSAGE" on stderr; the first one is also the JSON object's "error". */
void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A failure whose message a trace already printed: "gridsync: HEAD (...)", FULL for JSON. */
void fail_traced(const char *head, const char *full);
/* Members of the JSON object (no-ops without --json); key NULL inside an array.
 * json_open's bracket is '{' or '['. */
void json_str(const char *key, const char *v);
void json_int(const char *key, int64_t v);
void json_uint(const char *key, uint64_t v);
void json_num(const char *key, double v); /* null when not finite */
void json_bool(const char *key, int v);
void json_open(const char *key, char bracket);
void json_close(void);
/* Adds exit_status and error, prints the object; returns rc. */
int json_finish(int rc);

/* ---- dtypes and ops (cli.c) ---- */
typedef enum { K_SIGNED, K_UNSIGNED, K_FLOAT } num_kind;

typedef struct dtype_info {
    gs_dtype id;
    const char *alias; /* the long name also accepted: "int32", "float16", ... */
    num_kind kind;
    /* integers only: range for SUM data, [-sum_range, sum_range] or [0, 2 * sum_range] */
    uint64_t sum_range;
} dtype_info;
/* Indexed by gs_dtype (checked in main). */
extern const dtype_info k_dtypes[];
#define NDTYPES GS_DTYPE_COUNT
#define NOPS GS_OP_COUNT
int is_arg_op(gs_op op);
int is_bit_op(gs_op op);
/* Bytes of gs_reduce's (default) result. */
unsigned out_size(const dtype_info *t, gs_op op);

/* ---- inputs (input.c) ---- */
typedef enum { DATA_DEFAULT, DATA_INT, DATA_NAN, DATA_WIDE, DATA_COUNT } data_kind;
extern const char *const k_data_names[];
/* `buf` holds offset + n elements; the reduction's input starts at element `offset`. */
void make_input(const dtype_info *t, gs_op op, data_kind kind, void *buf, uint64_t offset, uint64_t n,
                uint64_t seed);

/* ---- checking (cli.c) ---- */
typedef hostref_verdict verdict;
/* hostref's check of one result of op over data[0..n) written as `out`, rigorous bound. */
void verify(const dtype_info *t, gs_op op, gs_dtype out, const void *data, uint64_t n, const unsigned char *got,
            verdict *v);
void verify_exact(const dtype_info *t, gs_dtype out, const void *data, uint64_t n, const unsigned char *got,
                  verdict *v);

/* ---- errors and options (cli.c) ---- */
extern const char *g_cmd; /* the subcommand, for usage messages */
/* Prints "gridsync: MESSAGE" and a pointer to --help; exits EXIT_USAGE. */
void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Report a failure on one line; return the exit status for it. */
int report_gs(const char *what, gs_status st);
int report_shim(const char *what);
int report_shim_init(cushim_status st);
const dtype_info *parse_dtype(const char *s);
gs_op parse_op(const char *s);
data_kind parse_data(const char *s);
/* A non-negative integer: decimal or 0x hex, optional suffix K M G T (powers of 1024). */
uint64_t parse_u64(const char *opt, const char *s, uint64_t max);
/* Matches "--name value" and "--name=value"; advances *i past the value. */
int take_opt(int argc, char **argv, int *i, const char *name, const char **value);
int is_help(const char *a);
void set_backend(const char *name);
uint64_t time_seed(void);

/* The options several commands take. --backend and --json every command takes; the rest
 * as `which` says. */
typedef struct common_opts {
    const dtype_info *t; /* --dtype (default f32) */
    gs_op op;            /* --op (default sum) */
    int device;          /* --device */
    uint64_t seed;       /* --seed, else from the clock (common_opts_done) */
    int have_seed;
    uint64_t repeat;     /* --repeat: calls per timed run (default 100) */
    const char *backend; /* --backend, or NULL */
} common_opts;
enum { OPT_DATA = 1 /* --dtype --op */, OPT_DEVICE = 2 /* --device --seed */, OPT_REPEAT = 4 };
void common_opts_init(common_opts *o);
/* Takes argv[*i] (and its value) if it is one of the common options; 1 if it did. */
int take_common_opt(int argc, char **argv, int *i, unsigned which, common_opts *o);
/* After parsing: the seed from the clock unless --seed gave one. */
void common_opts_done(common_opts *o);
/* A command's own options: takes argv[*i] (and its value, advancing *i) into `state` and
 * returns 1, or returns 0 when argv[*i] is none of them. */
typedef int (*own_opt_fn)(int argc, char **argv, int *i, void *state);
/* A command's whole command line, in order: --help prints `usage` and returns 1 (the
 * command then exits EXIT_OK); the common options `which` go to *o (initialised here and
 * finished with common_opts_done), the command's own to own(state) (own NULL: it has
 * none); anything else is a usage error. Returns 0 when the command is to run. */
int parse_command_line(int argc, char **argv, const char *usage, unsigned which, common_opts *o, own_opt_fn own,
                       void *state);

/* ---- the device session (cli.c) ---- */
typedef struct session {
    int device;
    gs_context *ctx;
    gs_context_info info;
    cushim_stream stream;
    int have_stream;
} session;
/* Each returns 0 or an exit status (the failure already reported). */
int session_open(session *s, int device);
int session_close(session *s, int rc);
/* The device and backend lines (and the JSON object "device"). */
void print_device_line(const gs_context_info *info);
void json_context_info(const gs_context_info *info);

#define POISON 0xA5
#define OUT_SLOT 16 /* bytes between the two result slots selftest uses */
/* Poisoned outputs, `times` launches into OUT_SLOT-spaced slots, wait, read back. */
gs_status launch_and_read(session *s, cushim_ptr in, uint64_t n, const dtype_info *t, gs_op op, gs_dtype out_dtype,
                          uint32_t flags, cushim_ptr out, unsigned char *got, int times, int *shim_failed);

/* ---- timing (timing.c) ---- */
/* Times `repeat` back-to-back launch(s, arg) per run; prints the time, the bandwidth for
 * bytes_per_call and the JSON object "timing". Returns 0 or an exit status (reported;
 * `what` names the call). */
int time_launches(session *s, gs_status (*launch)(session *s, const void *arg), const void *arg, uint64_t repeat,
                  const char *what, double bytes_per_call);
void print_bytes(const char *label, double bytes);

/* The backend directories and files (backends.c); returns how many files it found. */
int print_backends(void);

/* ---- the commands ---- */
extern const char k_usage_info[], k_usage_reduce[], k_usage_segmented[], k_usage_scan[], k_usage_selftest[];
int cmd_info(int argc, char **argv);
int cmd_reduce(int argc, char **argv);
int cmd_segmented(int argc, char **argv);
int cmd_scan(int argc, char **argv);
int cmd_selftest(int argc, char **argv);

#endif
