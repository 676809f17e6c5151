/* The gridsync command's timing of reduce and segmented: TIMED_RUNS runs of R back-to-back
 * launches on the session's stream between two events; the median run, per call. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

#include "cli.h"

#define TIMED_RUNS 7

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

int time_launches(session *s, gs_status (*launch)(session *s, const void *arg), const void *arg, uint64_t repeat,
                  const char *what, double bytes_per_call)
{
    cushim_event ev[2] = {NULL, NULL};
    float ms[TIMED_RUNS];
    int rc = EXIT_OK;
    if (cushim_event_create(&ev[0]) != 0 || cushim_event_create(&ev[1]) != 0) {
        rc = report_shim("creating events");
        goto done;
    }
    for (int r = 0; r < TIMED_RUNS; r++) {
        if (cushim_event_record(ev[0], s->stream) != 0) {
            rc = report_shim("recording an event");
            goto done;
        }
        for (uint64_t k = 0; k < repeat; k++) {
            gs_status st = launch(s, arg);
            if (st != GS_SUCCESS) {
                rc = report_gs(what, st);
                goto done;
            }
        }
        if (cushim_event_record(ev[1], s->stream) != 0 || cushim_stream_sync(s->stream) != 0 ||
            cushim_event_elapsed_ms(&ms[r], ev[0], ev[1]) != 0) {
            rc = report_shim("timing the calls");
            goto done;
        }
    }
    qsort(ms, TIMED_RUNS, sizeof ms[0], cmp_float);
    const double per_call_us = (double)ms[TIMED_RUNS / 2] * 1e3 / (double)repeat;
    const double min_us = (double)ms[0] * 1e3 / (double)repeat, max_us = (double)ms[TIMED_RUNS - 1] * 1e3 / (double)repeat;
    const double gbps = bytes_per_call > 0 && per_call_us > 0 ? bytes_per_call / per_call_us / 1e3 : -1;
    say("time:      %.3f us per call (median of %d runs of %" PRIu64 " back-to-back call%s; runs %.3f .. %.3f us "
        "per call)\n",
        per_call_us, TIMED_RUNS, repeat, repeat == 1 ? "" : "s", min_us, max_us);
    if (gbps > 0)
        say("bandwidth: %.1f GB/s (%.0f bytes moved per call)\n", gbps, bytes_per_call);
    else
        say("bandwidth: n/a\n");
    json_open("timing", '{');
    json_num("us_per_call", per_call_us);
    json_num("us_per_call_min", min_us);
    json_num("us_per_call_max", max_us);
    json_int("runs", TIMED_RUNS);
    json_uint("calls_per_run", repeat);
    json_num("bytes_per_call", bytes_per_call);
    json_num("gb_per_s", gbps > 0 ? gbps : NAN);
    json_close();
done:
    for (int i = 0; i < 2; i++)
        if (ev[i] && cushim_event_destroy(ev[i]) != 0)
            rc = rc ? rc : report_shim("destroying an event");
    return rc;
}

void print_bytes(const char *label, double bytes)
{
    if (bytes >= 1073741824.0)
        say("%s%.2f GiB", label, bytes / 1073741824.0);
    else if (bytes >= 1048576.0)
        say("%s%.2f MiB", label, bytes / 1048576.0);
    else if (bytes >= 1024.0)
        say("%s%.2f KiB", label, bytes / 1024.0);
    else
        say("%s%.0f bytes", label, bytes);
}
