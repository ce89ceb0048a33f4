/*
 * th_record.c - decision records compared field by field (th_record.h).
 */
#include "th.h"

#include <string.h>

#include "th_record.h"

static void assert_str_same(const char *x, const char *y)
{
    if (!x || !y)
        assert_ptr_equal(x, y);
    else
        assert_string_equal(x, y);
}

void th_assert_records_equal(const struct rd_record *x, const struct rd_record *y)
{
    assert_str_same(x->source, y->source);
    assert_str_same(x->render_digest, y->render_digest);
    assert_int_equal(x->nunits, y->nunits);
    for (size_t i = 0; i < x->nunits; i++) {
        const struct pl_prev_unit *u = &x->units[i], *v = &y->units[i];
        assert_str_same(u->unit, v->unit);
        assert_str_same(u->policy, v->policy);
        assert_str_same(u->policy_digest, v->policy_digest);
        assert_int_equal(u->nobjects, v->nobjects);
        for (size_t k = 0; k < u->nobjects; k++)
            assert_str_same(u->objects[k], v->objects[k]);
        assert_int_equal(u->state, v->state);
        assert_int_equal(u->nclusters, v->nclusters);
        for (size_t k = 0; k < u->nclusters; k++)
            assert_str_same(u->clusters[k], v->clusters[k]);
        assert_int_equal(u->percents != NULL, v->percents != NULL);
        for (size_t k = 0; u->percents && k < u->nclusters; k++)
            assert_int_equal(u->percents[k], v->percents[k]);
        assert_str_same(u->reason, v->reason);
        assert_str_same(u->cause, v->cause);
        assert_int_equal(u->nverdicts, v->nverdicts);
        for (size_t k = 0; k < u->nverdicts; k++) {
            assert_str_same(u->verdicts[k].cluster, v->verdicts[k].cluster);
            assert_int_equal(u->verdicts[k].kind, v->verdicts[k].kind);
            assert_str_same(u->verdicts[k].detail, v->verdicts[k].detail);
            assert_int_equal(u->verdicts[k].nodes_added, v->verdicts[k].nodes_added);
        }
        assert_memory_equal(&x->tallies[i], &y->tallies[i], sizeof(x->tallies[i]));
    }
}
