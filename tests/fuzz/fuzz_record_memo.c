/*
 * fuzz_record_memo.c - the record writer's memo read back from the record cache file
 * (rd_record_memo_import: bytes from the state directory, read as untrusted) never crashes,
 * leaks or reads past its input; a memo it accepts exports to bytes that read back to the
 * same bytes, and its digests come out sorted (rd_record_warning_listed searches them).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rc_arena.h"
#include "rc_buf.h"
#include "rc_err.h"
#include "rc_mem.h"
#include "rd_output.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly size bytes, so that ASan sees any read past the end */
    unsigned char *in = rc_xmalloc(size ? size : 1);
    struct rd_record_memo *m = NULL, *back = NULL;
    struct rc_buf out = RC_BUF_INIT, again = RC_BUF_INIT;
    struct rc_arena a = RC_ARENA_INIT;
    const uint64_t *d;
    size_t n;

    memcpy(in, data, size);
    rd_record_memo_new(&m);
    if (rd_record_memo_import(m, in, size) != RC_OK)
        goto done;
    d = rd_record_memo_reported_digests(m, &n, &a);
    for (size_t i = 1; i < n; i++) {
        if (d[i - 1] > d[i])
            abort();
    }
    rd_record_memo_export(m, &out);
    rd_record_memo_new(&back);
    if (rd_record_memo_import(back, out.ptr, out.len) != RC_OK)
        abort();
    rd_record_memo_export(back, &again);
    if (again.len != out.len || memcmp(again.ptr, out.ptr, out.len))
        abort();
done:
    rd_record_memo_free(m);
    rd_record_memo_free(back);
    rc_buf_release(&out);
    rc_buf_release(&again);
    rc_arena_release(&a);
    free(in);
    return 0;
}
