/*
 * A kernel that spins for about `ns` nanoseconds (the GPU's global timer), for the
 * launch-policy programs (tune.cu --queued, placement.cu): launched ahead of a timed run,
 * it keeps the GPU busy while the host queues the run's launches, so that the events
 * around the run time the GPU alone, not the host's launch rate.
 */
#pragma once

static __global__ void bench_spin(unsigned long long ns)
{
    unsigned long long t0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (;;) {
        unsigned long long t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t - t0 >= ns)
            break;
    }
}
