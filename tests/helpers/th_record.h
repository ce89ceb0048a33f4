/*
 * th_record.h - decision records compared field by field.
 */
#ifndef TH_RECORD_H
#define TH_RECORD_H

#include "rd_output.h"

/* Fails the test unless x and y hold the same record: every field, strings by value (NULL
 * only where the other is NULL), lists by their n entries, tallies byte for byte. */
void th_assert_records_equal(const struct rd_record *x, const struct rd_record *y);

#endif
