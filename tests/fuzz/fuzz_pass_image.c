/*
 * fuzz_pass_image.c - the pass image (rc_cache.h: bytes from the state directory, read as
 * untrusted) never crashes, leaks or reads past its input, and one it accepts writes out to
 * bytes that read back to the same image. The input is the body: the harness puts this
 * build's header before it and the checksum line after it, so that the fuzzer's bytes reach
 * the parser; a second try reads the input as it is.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rc_arena.h"
#include "rc_buf.h"
#include "rc_cache.h"
#include "rc_hash.h"
#include "rc_mem.h"
#include "rc_version.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void round_trip(const char *text, size_t len)
{
    struct rc_arena a = RC_ARENA_INIT;
    struct rc_image im, back;
    struct rc_buf once = RC_BUF_INIT, twice = RC_BUF_INIT;
    /* a copy of exactly len bytes, so that ASan sees any read past the end */
    char *in = rc_xmalloc(len ? len : 1);

    memcpy(in, text, len);
    if (rc_cache_image_parse(&im, in, len, &a)) {
        rc_cache_image_format(&once, &im);
        if (!rc_cache_image_parse(&back, once.ptr, once.len, &a))
            abort();
        rc_cache_image_format(&twice, &back);
        if (twice.len != once.len || memcmp(twice.ptr, once.ptr, once.len))
            abort();
    }
    rc_buf_release(&once);
    rc_buf_release(&twice);
    rc_arena_release(&a);
    free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rc_buf text = RC_BUF_INIT;
    size_t hlen;
    char *hdr = rc_version_state_header(&hlen, "rightplace-pass-image 1\n", "1");
    char end[32];

    rc_buf_add(&text, hdr, hlen, NULL);
    rc_buf_add(&text, data, size, NULL);
    snprintf(end, sizeof(end), "end %016llx\n", (unsigned long long)rc_xxh64(text.ptr, text.len));
    rc_buf_add(&text, end, strlen(end), NULL);
    round_trip(text.ptr, text.len);
    round_trip((const char *)data, size);
    rc_buf_release(&text);
    free(hdr);
    return 0;
}
