/*
 * rc_version.c - the version string, for --version and commit trailers.
 */
#include "rc_version.h"

const char *rc_version(void)
{
    return RP_VERSION;
}
