/*
 * pl_quantity.h - Kubernetes resource quantities ("500m", "12G", "1.5Gi", "1e3") as exact
 * int64 milli-units.
 *
 * The grammar is resource.Quantity's (k8s.io/apimachinery/pkg/api/resource):
 *
 *     quantity ::= [sign] number [suffix]
 *     number   ::= digits | digits "." | digits "." digits | "." digits
 *     suffix   ::= n | u | m | k | M | G | T | P | E          decimal SI
 *                | Ki | Mi | Gi | Ti | Pi | Ei                 binary SI
 *                | ("e" | "E") [sign] digits                   decimal exponent
 *
 * No whitespace anywhere. Arithmetic is exact integer arithmetic on the digits (no floating
 * point), so "0.1" is exactly 100 milli and "1.5Gi" exactly 1610612736000 milli.
 */
#ifndef PL_QUANTITY_H
#define PL_QUANTITY_H

#include <stdint.h>

struct rc_err;

/* Parse a Kubernetes resource.Quantity string ("500m", "12G", "1.5Gi", "1e3", "0.5") into
 * milli-units, exactly as resource.Quantity reads it, rounding up fractions of a milli-unit
 * as Kubernetes does. Overflow of int64 milli-units and malformed text are RC_EINVALID.
 *
 * Details:
 * - Rounding is away from zero, as Kubernetes' MilliValue(): "0.1m" and "1n" are 1 milli,
 *   "-1n" is -1 milli. Zero stays zero ("0", "-0", "0Gi", "0.000").
 * - Negative quantities parse (they are valid Quantities); callers reject negative requests.
 * - The range is [-INT64_MAX, INT64_MAX] milli-units; outside it the message is
 *   "quantity '<text>' is out of range". Kubernetes would switch to big decimals instead.
 * - Exponents must fit in int64, as Kubernetes requires, and are then taken mathematically
 *   (Kubernetes truncates them to int32): a huge positive exponent on a non-zero number is
 *   out of range, a huge negative one rounds up to 1 milli.
 * - Rejected, although resource.Quantity's scanner lets them through as zero, because the
 *   documented grammar above has no number in them: "", ".", "+", "Mi", "-k".
 * On error *out_milli is left unchanged. */
int pl_quantity_parse(int64_t *out_milli, const char *text, struct rc_err *err);

/* Format milli-units for people: cpu "500m"/"4", memory "12G"/"200Mi"/"36209715200",
 * others plain ("1", "250m"). Picks the shortest exact form; binary suffixes for memory
 * when exact, decimal otherwise. Always NUL-terminates; out has PL_QUANTITY_STR bytes.
 *
 * The output is always exact (pl_quantity_parse gives back `milli`) and deterministic:
 * - not memory: whole units as a plain integer ("4", "110"), else milli-units ("12500m");
 * - memory, not whole bytes: milli-units ("1500m");
 * - memory, whole bytes: the shorter of the decimal form (the largest of "", k, M, G, T, P,
 *   E that divides exactly: "12G", "36209715200") and the binary form (the largest of Ki ...
 *   Ei that divides exactly), the binary form winning ties. The binary form is only a
 *   candidate when its number is below 10000 ("200Mi", "1536Mi"): "35361050Ki" reads worse
 *   than "36209715200". */
#define PL_QUANTITY_STR 32
void pl_quantity_format(char out[PL_QUANTITY_STR], int64_t milli, int is_memory);

#endif
