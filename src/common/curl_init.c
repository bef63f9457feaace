/* curl_init — one curl_global_init per process and the feature check (see curl_init.h). */
#include "common/curl_init.h"
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>

static void init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

void curl_init_once(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, init);
}

static int no_op_prereq(void *u, char *a, char *b, int pa, int pb) {
    (void)u; (void)a; (void)b; (void)pa; (void)pb;
    return CURL_PREREQFUNC_OK;
}

int curl_check_features(char *err, size_t errlen) {
    curl_init_once();
    CURL *e = curl_easy_init();
    if (!e) { snprintf(err, errlen, "libcurl could not make a handle (out of memory?)"); return -1; }
    CURLcode rc = curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, no_op_prereq);
    curl_easy_cleanup(e);
    if (rc != CURLE_OK) {
        const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
        snprintf(err, errlen, "libcurl %s lacks the pre-request hook (CURLOPT_PREREQFUNCTION, libcurl >= 7.80) that stamps "
                 "each request's send time: install libcurl 7.80 or newer", v ? v->version : "?");
        return -1;
    }
    return 0;
}
