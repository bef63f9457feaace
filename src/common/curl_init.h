/* curl_init — libcurl's global initialisation, exactly once per process, from whichever thread
 * first needs libcurl (the client, the telemetry scraper, drift, tune's health checks), and the
 * check that this libcurl has what the measurement rests on. */
#ifndef DSP_CURL_INIT_H
#define DSP_CURL_INIT_H
#include <stddef.h>

/* curl_global_init once (pthread_once). */
void curl_init_once(void);
/* 0 when this libcurl has the pre-request hook (CURLOPT_PREREQFUNCTION, libcurl >= 7.80) that
 * stamps each request's send time; otherwise -1 with one line in err naming the version found. */
int curl_check_features(char *err, size_t errlen);
#endif
