/*
 * pl_quantity.h - TEMPORARY stand-in (engine branch) for vocab's header: only the
 * declarations the engine uses, exactly as in CONTRACTS.md. Replaced by main's on merge.
 */
#ifndef PL_QUANTITY_H
#define PL_QUANTITY_H

#include <stdint.h>

#define PL_QUANTITY_STR 32
void pl_quantity_format(char out[PL_QUANTITY_STR], int64_t milli, int is_memory);

#endif
