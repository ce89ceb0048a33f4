/*
 * rc_version.h - the version of rightplace.
 */
#ifndef RC_VERSION_H
#define RC_VERSION_H

#include <stddef.h>

const char *rc_version(void);

/* The header of a state file this build writes (the parse cache, the record cache), malloc'd
 * (*len bytes): `magic`, then "rightplace <version> load <digest of the Load step's sources>
 * <format>\n". A file with another header was written by another build and is not read. */
char *rc_version_state_header(size_t *len, const char *magic, const char *format);

#endif
