/*
 * rc_esc.h - control characters made visible, for every text rightplace writes for people
 * (log lines, error messages, commit messages, notes).
 *
 * File names and YAML values come from pushers and may hold terminal escapes (ESC, BEL), CR
 * or LF (a forged log line or commit trailer), C1 controls, or bidirectional overrides that
 * reorder what a reviewer sees. Escaped: C0 controls and DEL as \n \r \t \a \b \f \v \e or
 * \xHH; a byte that does not belong to valid UTF-8 as \xHH (a terminal reading Latin-1 takes
 * 0x9b for CSI); U+0080..U+009F and the bidirectional controls U+061C, U+200E, U+200F,
 * U+202A..U+202E, U+2066..U+2069 as \u{HHHH}. Everything else, backslashes included, is
 * copied, so the output stays readable and escaping it again changes nothing.
 */
#ifndef RC_ESC_H
#define RC_ESC_H

#include <stddef.h>

#include "rc_buf.h"
#include "rc_err.h"

/* Escape s into out (cap bytes, cap >= 1): always NUL-terminated; truncated at an escape or
 * character boundary when it does not fit. Returns the length written. */
size_t rc_esc(char *out, size_t cap, const char *s);

/* Append the n bytes of s to b, escaped. */
int rc_buf_add_esc(struct rc_buf *b, const char *s, size_t n, struct rc_err *err);

/* Does s hold anything rc_esc would escape? */
int rc_esc_needed(const char *s);

#endif
