/*
 * th_inputs.h - test helpers for the input modules: read test data, fill ${VAR} placeholders
 * the way envsubst does.
 */
#ifndef TH_INPUTS_H
#define TH_INPUTS_H

#include <stddef.h>

/* The contents of RP_SOURCE_DIR/<relpath>, NUL-terminated, malloc'd (free it); aborts the
 * test process if the file cannot be read. */
char *th_inputs_read(const char *relpath, size_t *len);

/* A malloc'd copy of text with every ${NAME} replaced by the value of the matching
 * "NAME=value" entry of vars (NULL-terminated); unknown names become "" as with envsubst.
 * An entry "*=value" matches every name (put it last, as the fallback). */
char *th_inputs_subst(const char *text, const char *const *vars);

#endif
