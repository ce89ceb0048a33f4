/*
 * th_inputs.c - test data helpers for the input modules (see th_inputs.h).
 */
#include "th_inputs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rc_buf.h"

char *th_inputs_read(const char *relpath, size_t *len)
{
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;
    char path[4096];

    snprintf(path, sizeof(path), "%s/%s", RP_SOURCE_DIR, relpath);
    if (rc_buf_read_file(&b, path, &err) < 0) {
        fprintf(stderr, "th_inputs_read: %s\n", err.msg);
        abort();
    }
    return rc_buf_detach(&b, len);
}

char *th_inputs_subst(const char *text, const char *const *vars)
{
    struct rc_buf b = RC_BUF_INIT;
    struct rc_err err = RC_ERR_INIT;
    const char *p = text;

    while (*p) {
        const char *end;
        if (p[0] == '$' && p[1] == '{' && (end = strchr(p + 2, '}')) != NULL) {
            size_t n = (size_t)(end - (p + 2));
            for (const char *const *v = vars; v && *v; v++) {
                if (!strncmp(*v, "*=", 2)) {
                    rc_buf_puts(&b, *v + 2, &err);
                    break;
                }
                if (!strncmp(*v, p + 2, n) && (*v)[n] == '=') {
                    rc_buf_puts(&b, *v + n + 1, &err);
                    break;
                }
            }
            p = end + 1;
        } else {
            rc_buf_putc(&b, *p++, &err);
        }
    }
    return rc_buf_detach(&b, NULL);
}
