/*
 * bench_yaml_scan.c - the floor for loading a source repository: a bare libyaml scan (parse
 * events, build nothing) of the same bytes rightplace loads. Reads file names, one a line,
 * from standard input; prints files, bytes, documents, events and the wall time.
 *
 *   find src -name '*.yaml' | bench_yaml_scan
 *
 * This is the one file outside render/rd_yaml.c that calls libyaml: it measures libyaml
 * itself, so that rightplace's figures can be read against it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <yaml.h>

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0;

    if (!f)
        return NULL;
    for (;;) {
        size_t got;
        if (n == cap) {
            char *nb;
            cap = cap ? cap * 2 : 65536;
            nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    *len = n;
    return buf;
}

int main(void)
{
    char line[4096];
    char **data = NULL;
    size_t *lens = NULL, nfiles = 0, cap = 0, bytes = 0, docs = 0, events = 0;
    double t0, t1;

    while (fgets(line, sizeof(line), stdin)) {
        size_t l = strlen(line);
        while (l && (line[l - 1] == '\n' || line[l - 1] == '\r'))
            line[--l] = '\0';
        if (!l)
            continue;
        if (nfiles == cap) {
            cap = cap ? cap * 2 : 1024;
            data = realloc(data, cap * sizeof(*data));
            lens = realloc(lens, cap * sizeof(*lens));
            if (!data || !lens)
                return 1;
        }
        data[nfiles] = slurp(line, &lens[nfiles]);
        if (!data[nfiles]) {
            fprintf(stderr, "bench_yaml_scan: cannot read '%s'\n", line);
            return 1;
        }
        bytes += lens[nfiles];
        nfiles++;
    }
    /* the files are in memory (as rightplace has them from git): time the scan only */
    t0 = now_s();
    for (size_t i = 0; i < nfiles; i++) {
        yaml_parser_t p;
        yaml_event_t ev;
        int done = 0;

        if (!yaml_parser_initialize(&p))
            return 1;
        yaml_parser_set_input_string(&p, (const unsigned char *)data[i], lens[i]);
        while (!done) {
            if (!yaml_parser_parse(&p, &ev)) {
                fprintf(stderr, "bench_yaml_scan: file %zu: %s\n", i,
                        p.problem ? p.problem : "error");
                break;
            }
            events++;
            docs += ev.type == YAML_DOCUMENT_START_EVENT;
            done = ev.type == YAML_STREAM_END_EVENT;
            yaml_event_delete(&ev);
        }
        yaml_parser_delete(&p);
    }
    t1 = now_s();
    printf("files %zu bytes %zu documents %zu events %zu scan_s %.3f MB/s %.1f\n", nfiles, bytes,
           docs, events, t1 - t0, (double)bytes / 1e6 / (t1 - t0 > 0 ? t1 - t0 : 1e-9));
    for (size_t i = 0; i < nfiles; i++)
        free(data[i]);
    free(data);
    free(lens);
    return 0;
}
