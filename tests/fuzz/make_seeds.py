#!/usr/bin/env python3
"""Writes the seed corpora of tests/fuzz/ (corpus/env/, corpus/api/): a few inputs per
path worth reaching, in the input formats fuzz_env.c and fuzz_api.c describe. The files are
committed; rerun this after changing a format:  python3 tests/fuzz/make_seeds.py"""
import os
import struct

here = os.path.dirname(os.path.abspath(__file__))


def write(kind, name, data):
    d = os.path.join(here, 'corpus', kind)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


# ---- fuzz_env: flags, then GRIDSYNC_BACKEND \0 GRIDSYNC_BACKEND_PATH \0 GRIDSYNC_DEBUG ----
BACKEND, PATH, DEBUG = 1, 2, 4
DEV = {0: 0, 1: 1 << 3, 2: 2 << 3, -1: 3 << 3}
CC = {'9.0': 0, '2.0': 1 << 5, '1.3': 2 << 5, '1.1': 3 << 5, '1.0': 4 << 5, '8.6': 5 << 5}


def env(name, flags, backend=b'', path=b'', debug=b''):
    write('env', name, bytes([flags]) + backend + b'\0' + path + b'\0' + debug)


env('none', 0)
env('debug-only', DEBUG, debug=b'1')
env('debug-zero', DEBUG, debug=b'0')
env('forced-good-path', BACKEND | DEBUG, b'/good/gridsync-fake_good.so', debug=b'1')
env('forced-good-name', BACKEND | PATH | DEBUG, b'fake_good', b'/bad:/good', b'1')
env('forced-sm20-bad-first', BACKEND | PATH | DEBUG, b'cuda_sm20', b'/bad:/good', b'yes')
env('forced-bogus', BACKEND | DEBUG, b'bogus name!', debug=b'1')
env('forced-relative', BACKEND, b'good/gridsync-fake_good.so')
env('forced-dotdot', BACKEND, b'/good/../good/gridsync-fake_good.so')
for bad in ['notelf', 'truncated', 'empty', 'dir', 'fake_wrong_abi_major', 'fake_entry_refuses',
            'fake_no_entry', 'fake_entry_fails', 'fake_no_reduce', 'fake_small_struct',
            'fake_open_no_image', 'cuda_sm20', 'cuda_sm11_compat', 'fifo']:
    env('forced-bad-' + bad, BACKEND | DEBUG, b'/bad/gridsync-' + bad.encode() + b'.so', debug=b'1')
env('forced-missing', BACKEND, b'/empty/gridsync-nothing.so')
env('path-good', PATH | DEBUG, path=b'/good', debug=b'1')
env('path-bad-then-good', PATH | DEBUG, path=b'/bad::relative:/empty:/good:', debug=b'1')
env('path-bad-only', PATH, path=b'/bad')
env('path-many', PATH, path=b':'.join([b'/empty'] * 40 + [b'/good']))
env('path-long', BACKEND | PATH | DEBUG, b'x' * 70, b'/' + b'd' * 300 + b':/good', b'1')
env('cc-1.0', PATH | CC['1.0'], path=b'/good')
env('cc-1.3-bad', PATH | DEBUG | CC['1.3'], path=b'/bad:/good', debug=b'1')
env('cc-2.0', PATH | CC['2.0'], path=b'/bad')
env('device-1', PATH | DEV[1], path=b'/good')
env('device-2', PATH | DEV[2], path=b'/good')
env('device-minus-1', BACKEND | DEV[-1], b'fake_good')
env('configured-dir', CC['8.6'])

# ---- fuzz_api: a sequence of calls ----------------------------------------------------
REDUCE, REDUCE_EX, GET_INFO, STATUS_STRING, CREATE, DRIVER, MISC, MESSAGE = range(8)
u32 = lambda v: struct.pack('<I', v & 0xffffffff)
u64 = lambda v: struct.pack('<Q', v & 0xffffffffffffffff)


def ptr_in(buf, offset):          # inside (or just past) buffer `buf` (0..4: 1, 8, 256, 4096, 1 MiB bytes)
    return bytes([(buf << 2) | 1]) + u32(offset)


def ptr_raw(value):
    return bytes([3]) + u64(value)


NULL = bytes([0])


def n_small(n):
    return bytes([n & 0x3f])


def n_mid(n):
    return bytes([0x40]) + u32(n)


def n_any(n):
    return bytes([0x80]) + u64(n)


def enum(v, lo=-1, span=12):      # fuzz_small_or_any's small form: lo + sel % span
    return bytes([(v - lo) % span])


def reduce(ctx, src, dst, n, dtype, op, stream=0, current=0, opts=None):
    b = bytes([REDUCE if opts is None else REDUCE_EX, ctx]) + src + dst + n
    b += enum(dtype, -1, 12) + enum(op, -1, 11) + bytes([stream, current])
    if opts is not None:
        if opts == 'null':
            b += bytes([0])
        else:
            struct_size, out_dtype = opts
            b += bytes([1]) + (bytes([struct_size]) if struct_size < 24 else bytes([0x80]) + u32(struct_size))
            b += enum(out_dtype, -1, 12)
    return b


F32, F64, I32, U8, I8, F16, I64 = 4, 5, 0, 9, 8, 6, 2
SUM, MAX, ARGMAX, AND = 0, 3, 5, 6
write('api', 'reduce-ok', reduce(1, ptr_in(4, 0), ptr_in(1, 0), n_mid(1000), F32, SUM))
write('api', 'reduce-default-ctx', reduce(0, ptr_in(4, 0), ptr_in(1, 0), n_small(16), I32, MAX))
write('api', 'reduce-current-dev1', reduce(0, ptr_in(4, 0), ptr_in(1, 0), n_small(16), I32, MAX, current=2))
write('api', 'reduce-streams', b''.join(reduce(1, ptr_in(4, 0), ptr_in(1, 0), n_small(8), F64, SUM, stream=s)
                                         for s in range(5)))
write('api', 'reduce-other-ctx', reduce(2, ptr_in(4, 0), ptr_in(1, 0), n_small(8), F32, SUM, stream=3))
write('api', 'reduce-argmax-u8', reduce(1, ptr_in(3, 1), ptr_in(1, 0), n_mid(4095), U8, ARGMAX))
write('api', 'reduce-past-end', reduce(1, ptr_in(3, 8), ptr_in(1, 0), n_mid(1023), F32, SUM))
write('api', 'reduce-misaligned', reduce(1, ptr_in(4, 2), ptr_in(1, 4), n_small(3), F64, SUM))
write('api', 'reduce-host-pointer', reduce(1, ptr_raw(0x7fff00001000), ptr_in(1, 0), n_small(4), I32, SUM))
write('api', 'reduce-wrap', reduce(1, ptr_in(4, 0), ptr_in(1, 0), n_any(2**62), I64, SUM))
write('api', 'reduce-null', reduce(1, NULL, NULL, n_small(0), F32, SUM) + reduce(1, NULL, ptr_in(1, 0), n_small(0), F32, SUM))
write('api', 'reduce-bad-enums', reduce(1, ptr_in(4, 0), ptr_in(1, 0), n_small(4), -1, SUM) +
      reduce(1, ptr_in(4, 0), ptr_in(1, 0), n_small(4), 10, SUM) + reduce(1, ptr_in(4, 0), ptr_in(1, 0), n_small(4), I32, 9))
write('api', 'reduce-float-bitwise', reduce(1, ptr_in(4, 0), ptr_in(1, 0), n_small(4), F16, AND))
write('api', 'reduce-ex-null', reduce(1, ptr_in(4, 0), ptr_in(1, 0), n_small(4), I32, SUM, opts='null'))
write('api', 'reduce-ex-sizes', b''.join(reduce(1, ptr_in(4, 0), ptr_in(1, 0), n_small(4), I8, SUM, opts=(s, I64))
                                          for s in (0, 4, 7, 8, 12, 200)))
write('api', 'reduce-ex-default', reduce(1, ptr_in(4, 0), ptr_in(1, 0), n_small(4), F16, MAX, opts=(8, -1)))
write('api', 'reduce-ex-bad-out', reduce(1, ptr_in(4, 0), ptr_in(1, 0), n_small(4), F32, SUM, opts=(8, 10)))
write('api', 'get-info', b''.join(bytes([GET_INFO, c, s]) for c in (0, 1, 2) for s in (0, 4, 7, 8, 12, 40, 72, 79)) +
      bytes([GET_INFO, 1, 0xc8]) + bytes([GET_INFO, 1, 0x80]) + u32(100000))
write('api', 'status-strings', b''.join(bytes([STATUS_STRING]) + u32(s) for s in (0, 5, 14, 15, -1, 2**31 - 1, 2**31)))
write('api', 'create-destroy', b''.join(bytes([CREATE, d, 1]) for d in range(6)) + bytes([CREATE, 2, 0]) +
      bytes([CREATE, 0x80]) + u32(-7) + bytes([1]))
write('api', 'driver', bytes([DRIVER, 0, DRIVER, 1, MISC, MESSAGE]))
