/*
 * rc_version.h - the version of rightplace.
 */
#ifndef RC_VERSION_H
#define RC_VERSION_H

const char *rc_version(void);

#endif
