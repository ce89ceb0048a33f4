/*
 * rc_version.c - the version string, for --version, commit trailers and state files.
 */
#include "rc_version.h"

#include "rc_buf.h"
#include "rc_load_digest.h"

const char *rc_version(void)
{
    return RP_VERSION;
}

char *rc_version_state_header(size_t *len, const char *magic, const char *format)
{
    struct rc_buf h = RC_BUF_INIT;

    rc_buf_printf(&h, NULL, "%srightplace %s load %s %s\n", magic, rc_version(), RC_LOAD_DIGEST,
                  format);
    return rc_buf_detach(&h, len);
}
